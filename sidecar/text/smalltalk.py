"""Small talk, pure: is a message a backchannel (a content-free reaction: "ok", "lol", "thanks!", "haha yes",
"gn", emoji only). Shared by the graph's quality filter (a backchannel makes no entities or traces) and by
`query` and `context`, where a backchannel never pads a list of results (messages/padding.py).

The backchannel patterns follow the dialogue-act filter of the Bud memory service (its backchannel
and greeting classes), extended for chat: laughter, emoji and emoticons, repeated letters, praise or
thanks that names no topic, short greetings; and the common reactions of the main languages (laughter:
"jaja", "mdr", "ахах", "ㅋㅋ", "哈哈", "555", "kkkk", "wkwk", "www"; yes, ok, thanks, bye: "vale", "genau",
"ага", "好的", "はい", "네", "ठीक है", "تمام", ...). Only a message made wholly of such reactions (and names
addressed) is one: a content message in any language never is. Measured on the labelled sample
tests/fixtures/backchannel.jsonl (`python scripts/bench.py graph-quality`).
"""

from __future__ import annotations

import re
import unicodedata

_REACTIONS = (
    # agreement, acknowledgement
    r"y(?:es|eah|ep|up|a|ea|ess+)|no(?:pe)?|nah|o+k(?:ay|ey)?|k+|kk|sure|right|correct|exactly|true|indeed|agreed|"
    r"same|me too|totally|definitely|absolutely|of course|for sure|got it|gotcha|understood|copy(?: that)?|noted|"
    r"i see|makes sense|fair(?: enough)?|i know|ikr|tru|word|bet|"
    # thanks, praise without a topic
    r"thanks?(?: (?:a lot|so much|you(?: so much)?|again|for that|man|mate))?|thank u|thx|ty|tysm|tyvm|cheers|"
    r"merci(?: beaucoup)?|danke(?: schön| schon)?|gracias|grazie|obrigad[oa]|arigato|спасибо|"
    r"cool|nice|great|awesome|perfect|sweet|neat|lovely|amazing|wonderful|fantastic|brilliant|excellent|"
    r"good(?: job| one| point| stuff)?|well done|nice one|you rock|keep it up|love it|love that|so cool|"
    r"(?:that'?s|thats|sounds|looks) (?:so |really |very )?(?:good|great|cool|nice|awesome|amazing|fun|"
    r"interesting|perfect|lovely|fantastic|wonderful|exciting)|lgtm|"
    # laughter, surprise, fillers
    r"(?:ha|ah|he|hi|ja|ha)+h?|lo+l+|lmao+|lmfao|rofl|xd+|kek|mdr|jaja(?:ja)*|hehe+|"
    r"w+o+w+|whoa+|woah+|omg+|oh(?: my god| wow| nice| cool| no| dear| man)?|ah+|oh+|uh+ huh|mhm+|m+|hm+|"
    r"huh|hmm+|yay+|woo+(?:hoo+)?|aww+|ugh+|oops|damn|dang|yikes|geez|jeez|phew|meh|"
    # greetings and goodbyes
    r"h(?:i+|ey+|ello+|eya|owdy)|yo+|sup|wassup|what'?s up|how are you|hru|good (?:morning|afternoon|evening|"
    r"night)|gm|gn|morning|night|bye+|goodbye|bye bye|later|laters|cya|see ya|see you|ttyl|brb|gtg|g2g|"
    r"bonjour|salut|hola|hallo|ciao|tschüss|привет|"
    r"you'?re welcome|np|no problem|no worries|anytime|my pleasure|sorry|my bad|oh well|welp|alright|all right|"
    # other languages: laughter
    r"(?:ja|je|ji)(?:ja|je|ji)+|(?:ha|he|hi|ah|eh)(?:ha|he|hi|ah|eh)+[ha]?|k{2,}|(?:rs){2,}|(?:wk)+w?|w{2,}|ptdr|"
    r"(?:ха|хе|хи|ах)+[ха]?|лол|ору|ㅋ+|ㅎ+|ㅠ+|ㅜ+|哈+|呵+|嘿+|嘻+|笑|草|5{2,}|(?:ฮ่า)+ๆ?|ฮ่าๆ|ه{3,}|خ{3,}|हा(?:हा)+|"
    # other languages: yes, ok, right, thanks, you're welcome, great, bye, good night
    r"s[ií]|vale|claro|dale|bueno|exacto|genial|perfecto|de nada|muchas gracias|buenas noches|chao|adi[oó]s|"
    r"oui|ouais|d'accord|dac|carr[eé]ment|exactement|parfait|g[eé]nial|de rien|trop bien|bonne nuit|[aà] plus|a\+|"
    r"ja|jo|jep|genau|stimmt|klar|na klar|alles klar|bitte|toll|gute nacht|bis dann|bis sp[aä]ter|danke sch[oö]n|"
    r"sim|beleza|valeu|t[aá]|t[aá] bom|show|massa|boa noite|tchau|obrigad[oa]|"
    r"certo|esatto|perfetto|va bene|buonanotte|"
    r"да|ага|угу|ок|окей|спс|пасиб|хорошо|ладно|понятно|понял|поняла|круто|класс|ясно|пока|спокойной ночи|"
    r"好|好的|好吧|嗯+|哦+|对|是的|谢谢|多谢|没问题|晚安|再见|拜拜|666+|"
    r"はい|うん|ええ|そう|そうだね|そうですね|かわいい|りょ|ありがとう|ありがとうございます|どうも|了解|りょうかい|おやすみ|またね|"
    r"じゃあね|なるほど|いいね|"
    r"네+|넹|응+|웅|ㅇㅇ|ㅇㅋ|오케이|오키|굿모닝|굿밤|감사합니다|고마워|고마워요|안녕|잘자|대박|헐|그래|알겠어|"
    r"हाँ|हां|जी|ठीक है|धन्यवाद|शुक्रिया|अच्छा|haan|theek hai|accha|shukriya|"
    r"نعم|تمام|شكرا|شكراً|حسنا|ماشي|يلا|[اأ]وكي|صباح الخير|مساء الخير|تصبح(?:ين|وا)? على خير|"
    r"evet|tamam|te[sş]ekk[uü]rler|sa[gğ]ol|iya|oke|sip|siap|makasih|terima kasih|"
    r"(?:ครับ|ค่ะ|โอเค|ขอบคุณ(?:มาก)?)(?:ครับ|ค่ะ|คะ|นะ)*|v[aâ]ng|d[aạ]|ừ|c[aả]m [oơ]n|"
    r"tak|jasne|dzi[eę]ki|bedankt|dank je|top|"
    r"sounds good|looks good|works for me|fine|ok then|okay then|"
    # phatic clauses of chat: wishes, sympathy, encouragement that names no topic
    r"take care(?: of yourself)?|you too|same here|me too|same to you|talk (?:to you )?(?:later|soon)|chat soon|"
    r"catch you (?:later|soon)|stay safe|see you (?:soon|later|around)|welcome back|congrats+|congratulations|"
    r"gg|fr|afk|\+1|ayy+|sheesh|sure thing|that'?s the spirit|way to go|go for it|you got this|we got this|"
    r"can'?t wait(?: too| either)?|glad (?:it helped(?: ya| you)?|you (?:liked|enjoyed) it|you had fun|to hear(?: it)?|"
    r"to help)|i'?m (?:always )?here for you|(?:it|that) (?:was|is|'s) (?:so |really )?(?:great|fun|nice|cool|sad|"
    r"awesome|amazing|important|exciting|lovely)|(?:that'?s|thats|how) (?:so |really |very )?(?:sad|important|"
    r"exciting|cute|sweet|funny|crazy|wild|inspiring|impressive)|appreciate (?:it|that|the kind words|your support)|"
    r"thanks for (?:the (?:support|compliment|kind words)|being there(?: for me)?)|enjoy(?: yourself| it)?|"
    r"long time no see|nice to (?:hear from|see) you|good to see you|great chatting with you|"
    r"everyone|mate|man|guys|all|dude|bro|too|(?:how'?s it going)|what'?s new(?: with you)?|anything new"
)
_REACTION = re.compile(rf"(?:{_REACTIONS})")
# full-width ASCII ("ｗｗｗ", "ｏｋ") as ASCII; not NFKC, which would turn Hangul jamo ("ㅋㅋ") into others
# full-width ASCII ("ｗｗｗ", "ＬＯＬ！") folded to ASCII; not NFKC, which also turns the Hangul jamo of "ㅋㅋㅋ" into
# conjoining ones that the reactions no longer match
_FULL_WIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
_REACTIONS_RUN = re.compile(rf"(?:{_REACTIONS})+")
_SPACELESS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\u3130-\u318f]")  # Kana, Han, Hangul
_EMOTICON = re.compile(r"[:;=xX8][-']?[)(DPpOo3/\\|*]+|<3+|\^\^|\^_\^|[oO]_[oO]|-_-|T_T")
_NAME = re.compile(r"[A-Z][\w'’-]*")


def _is_symbolic(text: str) -> bool:
    """Only emoji, emoticons, punctuation and spaces."""
    rest = _EMOTICON.sub("", text)
    return all(unicodedata.category(c)[0] in "SPZC" or c in "\u200d\ufe0f" for c in rest)


def is_backchannel(text: str) -> bool:
    """A content-free reaction. Each clause (split at , . ! ? and ;) must be a reaction, an emoji or
    emoticon, or a name being addressed ("Thanks, Caroline!")."""
    stripped = text.translate(_FULL_WIDTH).strip()
    if not stripped or _is_symbolic(stripped):
        return True
    if len(stripped) > 80:
        return False
    clauses = [c.strip() for c in re.split(r"[,.!?;…~，。！？、；～]+|\s+-\s+", stripped) if c.strip()]
    for clause in clauses:
        if _is_symbolic(clause):
            continue
        words = clause.split()
        core = " ".join(w for w in words if not _is_symbolic(w))
        low = re.sub(r"(\w)\1{2,}", r"\1\1", core.casefold())  # "sooo" -> "soo"
        if _REACTION.fullmatch(low) or _REACTION.fullmatch(low.replace("soo ", "so ")):
            continue
        if _SPACELESS.search(low) and _REACTIONS_RUN.fullmatch(low):
            continue  # "哈哈好的": reactions run together in a script written without spaces
        # "thanks Caroline", "bye Mel", "haha yes", "ok cool": a reaction then names or more reactions
        if all(_REACTION.fullmatch(w.casefold()) or (_NAME.fullmatch(w) and i > 0) for i, w in enumerate(core.split())):
            continue
        if len(core.split()) == 1 and _NAME.fullmatch(core) and len(clauses) > 1:
            continue  # the addressed name in "Thanks, Caroline!"
        return False
    return True
