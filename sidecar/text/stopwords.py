"""Stop words per language: the function words (articles, pronouns, prepositions, conjunctions, auxiliaries
and particles) that keyword search drops, and that the language decision counts (languages.py). Written
small on purpose: a word a user might search for (a noun, a content verb) is never on a list.

English is the list LanceDB's tokenizer has (NLTK's), compared with the *stemmed* word, as before; every
other list is compared with the word as written (after NFKC and case folding, before stemming)."""

from __future__ import annotations

ENGLISH = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
    it its itself they them their theirs themselves what which who whom this that these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until while of at by for with
    about against between into through during before after above below to from up down in out on off over under
    again further then once here there when where why how all any both each few more most other some such no nor not
    only own same so than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn
    hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn""".split()
)

_LISTS = {
    "de": """aber als am an auch auf aus bei bin bis bist da damit dann das dass dem den denn der des dich dir doch
        du ein eine einem einen einer eines er es euch euer eure für hab habe haben hast hat hatte hatten ich ihm ihn
        ihnen ihr ihre im in ist ja jetzt kein keine mal man mich mir mit nach nicht noch nur ob oder ohne schon sehr
        sein seine sich sie sind so über um und uns unser unsere vom von vor war waren warum was weil wenn wer wie
        wieder wir wird wo zu zum zur""",
    "fr": """à au aux avec ce ces cette c d dans de des du elle elles en est et été être eu il ils j je l la le les
        leur leurs lui m ma mais me mes moi mon n ne nos notre nous on ou où par pas pour qu que qui s sa sans se ses
        son sur t ta te tes toi ton tu un une vos votre vous y ai as a avons avez ont suis es sommes êtes sont était
        c'est très plus""",
    "es": """a al algo algunos ante antes como con contra cual cuando de del desde donde durante e el ella ellas
        ellos en entre era es esa ese eso esta estaba estas este esto estos estoy fue fueron ha había han hay la las
        le les lo los me mi mis muy más nada ni no nos nosotros o os otra otro para pero poco por porque que quien se
        ser si sin sobre son su sus también te tengo ti tu tus tú un una uno unos y ya yo él""",
    "pt": """a ao aos as até com como da das de dela dele do dos e ela ele eles em entre era essa esse esta está
        estou este eu foi for há isso isto já lhe mais mas me meu minha muito na nas nem no nos nós num numa o os ou
        para pela pelo por que se sem seu sua são também te tem tenho tu um uma você vocês é""",
    "it": """a ad al alla alle ai agli anche che chi ci come con da dal dalla dei del della delle di e è ed era gli
        ha hai ho i il in io la le lei li lo loro lui ma mi mia mio ne nel nella no noi non o per più quando quello
        questa questo se si sono su sua suo ti tu tra un una uno voi""",
    "nl": """aan al als bij dan dat de die dit door een en er had heb hebben heeft het hij hoe hun ik in is je jij
        kan maar me met mijn naar niet nog nu of om onder ons ook op over te tot u uit van veel voor was wat we wel
        wie wij worden zal ze zij zijn zo""",
    "sv": """alla att av de dem den denna det detta du där efter eller en ett från för han hans har hon honom hur
        i inte jag kan man med men mig min mina mitt mot ni nu och om oss på sig sin sina sitt som så till under
        upp ut var vad vi vid är""",
    "ru": """а без бы был была были было в вам вас весь во вот все всё вы где да для до его ее её если есть ещё
        же за и из или им их к как когда кто ли мне меня мы на над не него нет ни но ну о об от по под при про с
        так там тебе тебя то тоже только ты у уже чем что чтобы эта эти это я""",
    "tr": """ama bana bazı ben beni benim bir biraz biz bize bizim bu buna bunu çok da daha de diye en gibi hem
        her için ile ise kadar ki mi mı mu mü ne o ona onu onun sen seni senin siz şu ve veya ya yani""",
    "id": """ada adalah agar akan aku anda apa atau bagi bahwa belum bisa dan dari dengan di dia ini itu juga ka
        kami kamu kan karena ke kita lagi mereka nya oleh pada saja saya sebagai sedang sudah tapi tetapi untuk
        yang ya""",
    "ar": """في من على إلى الى عن مع هذا هذه ذلك تلك هو هي أنا انا أنت انت نحن هم التي الذي الذين كان كانت
        لا لم لن ما ماذا هل قد ثم أو او أن ان إن كل بعض عند لكن بين حتى إذا اذا كيف""",
    "hi": """का की के को में से पर और है हैं था थी थे हो होता होती यह वह ये वो मैं तुम आप हम मुझे मेरा मेरी
        मेरे तुम्हारा उस उसका उसकी इस इसका ने भी तो ही कि जो नहीं एक लिए""",
}
STOP_WORDS: dict[str, frozenset[str]] = {
    "en": ENGLISH,
    **{lang: frozenset(words.split()) for lang, words in _LISTS.items()},
}
