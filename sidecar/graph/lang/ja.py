"""Japanese: the cues that state relations, matched by pattern (no spaces between words: "大阪に引っ越しました"),
names found by the introductions that name people ("友達の田中さん", "妹の花子"), pets, jobs, what blocks a reading
(pure data). A name or a place is a run of kanji, katakana or Latin letters: the particles around it are
hiragana."""

from __future__ import annotations

import re

from .types import CueGrammar, Lexicon, Validity, alternation, cue_maker

KIN = {
    "妹": "sister", "姉": "sister", "お姉さん": "sister", "姉さん": "sister", "兄": "brother", "お兄さん": "brother",
    "兄さん": "brother", "弟": "brother", "母": "mother", "お母さん": "mother", "母親": "mother", "父": "father",
    "お父さん": "father", "父親": "father", "息子": "son", "娘": "daughter", "夫": "partner", "旦那": "partner",
    "主人": "partner", "妻": "partner", "嫁": "partner", "彼氏": "partner", "彼女": "partner", "婚約者": "partner",
    "友達": "friend", "友人": "friend", "親友": "friend", "同僚": "colleague", "いとこ": "relative",
    "叔父": "relative", "伯父": "relative", "叔母": "relative", "伯母": "relative", "祖父": "relative",
    "祖母": "relative", "おじいちゃん": "relative", "おばあちゃん": "relative", "甥": "relative", "姪": "relative",
    "孫": "relative", "ルームメイト": "", "上司": "", "先輩": "", "後輩": "",
}  # fmt: skip
SHE = {"妹", "姉", "お姉さん", "姉さん", "母", "お母さん", "母親", "娘", "妻", "嫁", "彼女", "叔母", "伯母", "祖母",
       "おばあちゃん", "姪"}  # fmt: skip
HE = {"兄", "お兄さん", "兄さん", "弟", "父", "お父さん", "父親", "息子", "夫", "旦那", "主人", "彼氏", "叔父", "伯父",
      "祖父", "おじいちゃん", "甥"}  # fmt: skip
PETS = ["犬", "猫", "子犬", "子猫", "うさぎ", "ウサギ", "ハムスター", "インコ", "金魚", "カメ", "亀"]
JOBS = ["看護師", "医者", "医師", "先生", "教師", "エンジニア", "プログラマー", "弁護士", "デザイナー", "料理人",
        "シェフ", "会計士", "記者", "警察官", "運転手", "公務員", "建築家", "歯医者", "薬剤師", "獣医", "翻訳家",
        "研究者", "科学者", "写真家", "音楽家", "俳優", "秘書", "美容師", "教授", "大学教授", "保育士", "介護士",
        "会社員", "消防士", "パイロット", "銀行員", "作家", "漫画家", "営業", "店員", "薬剤師", "税理士"]  # fmt: skip
N = r"[\u3400-\u4dbf\u4e00-\u9fff\u30a0-\u30ffA-Za-zＡ-Ｚａ-ｚ0-9々ー・]+"
TIME = r"(?:先月|去年|昨年|今年|最近|先週|現在|今|以前|昔|来月|来年)"
INSTITUTIONS = r"(?:大学|大学院|学校|高校|中学校|中学|小学校|専門学校|学院|学園)"
POLITE = r"(?:います|いる|いて|ます|る)"
PARTS = {"N": N, "T": rf"{TIME}?", "TITLE": alternation(JOBS), "PET": alternation(PETS), "POLITE": POLITE}


_cue = cue_maker(PARTS, subject="any")


CUES = (
    _cue("lives_in", r"{T}(?P<o>{N})に住んで{POLITE}"),
    _cue("lives_in", r"{T}(?P<o>{N})(?:に|へ)(?:引っ越し|引越し|引っ越して|移住し|移り住み)(?:ました|た|てきました|てきた)"),
    _cue("lives_in", r"{T}(?P<o>{N})在住(?:です|だ|で)"),
    _cue("lives_in", r"もう(?P<o>{N})(?:に|には)住んでいません", ended=True),
    _cue("lives_in", r"{T}(?P<o>{N})に住んでいました", ended=True),
    _cue("lives_in", r"{T}(?P<o>{N})から(?:引っ越し|引越し)(?:ました|た)", ended=True),
    _cue("works_at", r"{T}(?P<o>{N})で働いて{POLITE}"),
    _cue("works_at", r"{T}(?P<o>{N})に(?:勤めて|勤務して){POLITE}"),
    _cue("works_at", r"{T}(?P<o>{N})の社員(?:です|だ)"),
    _cue("works_at", r"{T}(?P<o>{N})に(?:入社|転職|就職)(?:しました|した)"),
    _cue("works_at", r"{T}(?P<o>{N})を(?:辞めました|辞めた|退職しました|退職した)", ended=True),
    _cue("works_at", r"もう(?P<o>{N})(?:では|で)働いていません", ended=True),
    _cue("works_at", r"{T}(?P<o>{N})で働いていました", ended=True),
    _cue("job_title", r"は(?P<o>{TITLE})(?:です|だ|をしています|をしている)"),
    _cue("job_title", r"(?P<o>{TITLE})として働いて{POLITE}"),
    _cue("studies_at", rf"{{T}}(?P<o>{{N}}{INSTITUTIONS})(?:に通って|で勉強して|に在学して){{POLITE}}"),
    _cue("studies_at", rf"{{T}}(?P<o>{{N}}{INSTITUTIONS})の(?:学生|大学生|院生)(?:です|だ)"),
    _cue("partner", r"(?P<o>{N})(?:さん|くん)?と結婚(?:しています|している|しました|した)"),
    _cue("partner", r"(?P<o>{N})(?:さん|くん)?と付き合って{POLITE}"),
    _cue("has_pet", r"(?P<o>{N})という(?:{PET})を飼って{POLITE}"),
    _cue("has_pet", r"(?:{PET})の名前は(?P<o>{N})(?:です|だ|。|$)"),
    _cue("has_pet", r"(?:{PET})を飼っていて、?名前は(?P<o>{N})"),
    _cue("likes", r"(?P<o>[^、。！？!?\sはがをにでとのもか]{1,12})が(?:大好き|好き)(?:です|だ|!|！|。|$)", thing=True),
    _cue("dislikes", r"(?P<o>[^、。！？!?\sはがをにでとのもか]{1,12})が(?:大嫌い|嫌い|苦手)(?:です|だ|!|！|。|$)", thing=True),
)  # fmt: skip

KIN_WORDS = alternation(KIN)
INTRODUCTIONS = (
    re.compile(rf"(?:私の|僕の|俺の|うちの)?(?P<k>{KIN_WORDS})(?:の|である)(?P<n>{N})(?:さん|くん|君|ちゃん|様)?"),
    re.compile(rf"(?:私の|僕の|俺の|うちの)?(?P<k>{KIN_WORDS})の名前は(?P<n>{N})(?=です|だ|。|$)"),
)
NOT_NAMES = frozenset(
    {"家", "会社", "学校", "大学", "高校", "病院", "仕事", "車", "犬", "猫", "誕生日", "結婚式", "日", "部屋", "名前",
     "こと", "話", "写真", "店", "友達", "私", "僕", "俺", "彼", "彼女", "今日", "明日", "昨日", "週末", "部活"}
)  # fmt: skip
GRAMMAR = CueGrammar(
    cues=CUES,
    introductions=INTRODUCTIONS,
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    pronouns={"彼女": "she", "彼": "he"},
    sentence_end=re.compile(r"[。！？!?\n]+"),
    clause_cut=re.compile(r"[、，,；;]|けど|けれど|ので|から、"),
    question=re.compile(r"[?？]|か[。\s]*$|(?:ですか|ますか)"),
    block=re.compile(
        r"ない|ません|なかった|たい|たら|もし|かも|だろう|でしょう|予定|つもり|と思|らしい|そうです|って言|来年|来月|明日|いつか|なら"
    ),
    self_before=re.compile(
        rf"\s*(?:(?:私|僕|俺|わたし|ぼく|おれ|私たち|僕たち|うち)(?:は|も|が)?|{TIME}|やっと|ついに|ずっと|\s)*"
    ),
    link=re.compile(r"\s*(?:は|が|も)?"),
    name=re.compile(r"彼女|彼"),
    not_names=NOT_NAMES,
    article=re.compile(r"(?!)"),
    honorifics=re.compile(r"(?:さん|くん|君|ちゃん|様)$"),
    cased=False,
)

VALIDITY = Validity(
    present=re.compile(r"今|現在|最近|いま"),
    past=re.compile(r"以前|前は|昔|元の|前の|かつて|当時"),
    predicates={
        "lives_in": re.compile(r"住|引っ越|街"),
        "works_at": re.compile(r"働|勤め|会社|職場"),
        "job_title": re.compile(r"職業|仕事は"),
        "studies_at": re.compile(r"大学|学校|通って"),
        "partner": re.compile(r"夫|妻|彼氏|彼女|結婚"),
    },
    sentences={
        "lives_in": "{o}に住んでいる",
        "works_at": "{o}で働いている",
        "job_title": "{o}をしている",
        "studies_at": "{o}に通っている",
        "partner": "パートナーは{o}",
        "sister": "姉妹：{o}",
        "brother": "兄弟：{o}",
        "mother": "母：{o}",
        "father": "父：{o}",
        "son": "息子：{o}",
        "daughter": "娘：{o}",
        "relative": "親戚：{o}",
        "friend": "友達：{o}",
        "colleague": "同僚：{o}",
        "has_pet": "ペットの名前は{o}",
        "likes": "{o}が好き",
        "dislikes": "{o}が嫌い",
    },
    others={
        "lives_in": "{s}は{o}に住んでいる",
        "works_at": "{s}は{o}で働いている",
        "job_title": "{s}は{o}をしている",
        "studies_at": "{s}は{o}に通っている",
    },
)

LEXICON = Lexicon(
    code="ja",
    cues=GRAMMAR,
    first_person=re.compile(r"私|僕|俺|わたし|ぼく|うち|自分|ています|ました"),
    validity=VALIDITY,
)
