"""Chinese: the cues that state relations, matched by pattern (no spaces between words: "搬到了上海", "我在腾讯
工作"), kin words and the introductions that name people ("我妹妹叫小红"), pets, jobs, what blocks a reading (pure
data)."""

from __future__ import annotations

import re

from .types import CueGrammar, Lexicon, Validity, alternation, cue_maker

KIN = {
    "妹妹": "sister", "姐姐": "sister", "妹": "sister", "姐": "sister", "哥哥": "brother", "弟弟": "brother",
    "哥": "brother", "弟": "brother", "妈妈": "mother", "母亲": "mother", "妈": "mother", "爸爸": "father",
    "父亲": "father", "爸": "father", "儿子": "son", "女儿": "daughter", "老公": "partner", "老婆": "partner",
    "丈夫": "partner", "妻子": "partner", "太太": "partner", "男朋友": "partner", "女朋友": "partner",
    "男友": "partner", "女友": "partner", "未婚夫": "partner", "未婚妻": "partner", "爱人": "partner",
    "对象": "partner", "朋友": "friend", "好朋友": "friend", "最好的朋友": "friend", "闺蜜": "friend",
    "好友": "friend", "同事": "colleague", "表哥": "relative", "表姐": "relative", "表弟": "relative",
    "表妹": "relative", "堂哥": "relative", "堂姐": "relative", "叔叔": "relative", "阿姨": "relative",
    "舅舅": "relative", "姑姑": "relative", "爷爷": "relative", "奶奶": "relative", "外公": "relative",
    "外婆": "relative", "侄子": "relative", "侄女": "relative", "外甥": "relative", "孙子": "relative",
    "孙女": "relative", "室友": "", "邻居": "", "老板": "", "同学": "",
}  # fmt: skip
SHE = {"妹妹", "姐姐", "妹", "姐", "妈妈", "母亲", "妈", "女儿", "老婆", "妻子", "太太", "女朋友", "女友", "未婚妻",
       "闺蜜", "表姐", "表妹", "堂姐", "阿姨", "姑姑", "奶奶", "外婆", "侄女", "孙女"}  # fmt: skip
HE = {"哥哥", "弟弟", "哥", "弟", "爸爸", "父亲", "爸", "儿子", "老公", "丈夫", "男朋友", "男友", "未婚夫", "表哥",
      "表弟", "堂哥", "叔叔", "舅舅", "爷爷", "外公", "侄子", "外甥", "孙子"}  # fmt: skip
PETS = ["狗狗", "小狗", "狗", "猫咪", "小猫", "猫", "兔子", "仓鼠", "鹦鹉", "乌龟", "金鱼", "鱼"]
JOBS = ["老师", "教师", "护士", "医生", "工程师", "软件工程师", "程序员", "律师", "设计师", "厨师", "会计",
        "记者", "警察", "司机", "销售", "经理", "产品经理", "建筑师", "牙医", "药剂师", "心理医生", "兽医", "翻译",
        "研究员", "科学家", "摄影师", "音乐家", "演员", "秘书", "服务员", "理发师", "教授", "数据分析师", "公务员",
        "农民", "商人", "咨询师", "电工", "作家", "画家", "银行职员", "快递员", "外卖员", "保安", "店员", "主播"]  # fmt: skip
INSTITUTIONS = r"(?:大学|学院|学校|中学|小学|高中|研究所|研究生院|University|College)"
HAN = r"\u3400-\u4dbf\u4e00-\u9fff"
NOT_START = "很也都在是的了不就还刚已现今昨去要会有没太真好最特非比跟和说对把被让给从为这那一我你他她它们"
# a name or place: Han (or Latin) characters, up to what follows it in the cue
N = rf"(?![{NOT_START}])[{HAN}A-Za-z0-9·]{{1,12}}?"
TERM = r"(?=[，,。.！!？?、；;：:\s~～…）)]|$|了|啦|呢|吧|啊|呀|的|和|跟|工作|上班|读书|上学|念书|学习|生活|定居)"
PERSON = rf"(?![{NOT_START}])[{HAN}]{{2,3}}?(?=[，,。.！!？?、；;\s]|$|在|住|是|今年|也|和|跟|刚|已经|现在|从|去年|上个月|最近|搬|喜欢|讨厌|有|嫁|娶|要|会|很|的|在)"
THING = r"(?![的是])[^，,。.！!？?、；;：:\s的是]{1,10}"
TIME = (
    r"(?:上个月|上周|上星期|去年|今年|前年|最近|刚刚|刚|已经|现在|目前|终于|昨天|今天|前天|上礼拜|这个月|"
    r"[一二三四五六七八九十两\d]+(?:年|个月|周|天|个星期)前|(?:19|20)\d\d年|[一二三四五六七八九十\d]+月(?:份)?)"
)
ADV = r"(?:也|还|都|就|一直|正在|已经|刚刚|刚|终于|现在|目前|已|才|又)"
PARTS = {"N": N, "TERM": TERM, "TITLE": alternation(JOBS), "PET": alternation(PETS), "THING": THING, "ADV": ADV}


_cue = cue_maker(PARTS, subject="any")


CUES = (
    _cue("lives_in", r"(?:住在|生活在|定居在|定居于)(?P<o>{N}){TERM}"),
    _cue("lives_in", r"(?:搬到了|搬到|搬去了|搬去|搬家到了|搬家到|移居到|移居)(?P<o>{N}){TERM}"),
    _cue("lives_in", r"在(?P<o>{N})(?:住|生活|定居)(?:了|着)?{TERM}"),
    _cue("lives_in", r"不住在(?P<o>{N})了", ended=True),
    _cue("lives_in", r"不再住在(?P<o>{N}){TERM}", ended=True),
    _cue("lives_in", r"(?:以前|之前|原来|曾经)住在(?P<o>{N}){TERM}", ended=True),
    _cue("lives_in", r"从(?P<o>{N})搬(?:走|出来|出去)", ended=True),
    _cue("works_at", r"在(?P<o>{N})(?:工作|上班|任职|实习)"),
    _cue("works_at", r"(?:加入了|加入|入职了|入职|跳槽到了|跳槽到|进了)(?P<o>{N}){TERM}"),
    _cue("works_at", r"不再在(?P<o>{N})(?:工作|上班)", ended=True),
    _cue("works_at", r"(?:以前|之前|原来|曾经)在(?P<o>{N})(?:工作|上班)", ended=True),
    _cue("works_at", r"从(?P<o>{N})(?:辞职|离职)", ended=True),
    _cue("works_at", r"(?:辞去了|辞掉了|辞了)(?P<o>{N})的工作", ended=True),
    _cue("works_at", r"(?:被)?(?P<o>{N})(?:裁员|开除|解雇)了我", ended=True),
    _cue("job_title", r"是(?:一[名个位])?(?P<o>{TITLE})(?=[，,。.！!？?\s]|$|了|啊|呢)"),
    _cue("job_title", r"(?:当|做)(?P<o>{TITLE})(?=[，,。.！!？?\s]|$|了)"),
    _cue("studies_at", rf"在(?P<o>{N}{INSTITUTIONS})(?:读书|上学|念书|读大学|读研|读博|学习|上大学)"),
    _cue("studies_at", rf"就读于(?P<o>{N}{INSTITUTIONS}){TERM}"),
    _cue("partner", r"(?:嫁给了|娶了|嫁给)(?P<o>{N}){TERM}"),
    _cue("partner", r"和(?P<o>{N})结婚了"),
    _cue("has_pet", r"(?:有|养了|养)(?:一[只条个])?(?:{PET})(?:叫|名叫|叫做)(?P<o>{N}){TERM}"),
    _cue("has_pet", r"的(?:{PET})(?:叫|名叫|叫做|的名字叫|的名字是)(?P<o>{N}){TERM}"),
    _cue("likes", r"(?:很|非常|特别|超级|超|最|真的)?(?:喜欢|热爱|爱)(?P<o>{THING})(?=[，,。.！!？?\s~～]|$|了|啊|呀)", thing=True),
    _cue("dislikes", r"(?:很|非常|特别|超级|超|最|真的)?(?:讨厌|不喜欢|受不了|恨)(?P<o>{THING})(?=[，,。.！!？?\s~～]|$|了|啊|呀)", thing=True),
)  # fmt: skip

KIN_WORDS = alternation(KIN)
INTRODUCTIONS = (
    re.compile(rf"(?:我|我们|咱)(?:的)?(?:一个)?(?P<k>{KIN_WORDS})(?:叫|名叫|叫做|是)?(?P<n>{PERSON})"),
    re.compile(rf"(?P<n>{PERSON})是我(?:的)?(?P<k>{KIN_WORDS})"),
)
NOT_NAMES = frozenset(
    {"我", "你", "他", "她", "它", "我们", "你们", "他们", "这", "那", "这个", "那个", "什么", "东西", "一切",
     "大学", "学校", "公司", "医院", "家", "家里", "这里", "那里", "工作", "这儿", "那儿", "国外", "老家", "城市"}
)  # fmt: skip
GRAMMAR = CueGrammar(
    cues=CUES,
    introductions=INTRODUCTIONS,
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    pronouns={"她": "she", "他": "he"},
    sentence_end=re.compile(r"[。！？!?\n]+|(?<!\d)\.(?=\s|$)"),
    clause_cut=re.compile(r"[，,；;：:、]|但是|可是|不过|而且|然后|所以|因为"),
    question=re.compile(r"[?？]|吗[。！!\s]*$|[吗呢](?=[。！!，,\s]*$)"),
    block=re.compile(
        r"不|没|别|如果|要是|假如|的话|想|希望|打算|计划|准备|可能|也许|或许|大概|将|会(?!计)|要|明年|下个月|下周|明天|"
        r"以后|将来|听说|(?<!小)说|觉得|认为|梦想|但愿"
    ),
    self_before=re.compile(rf"\s*(?:(?:{TIME}|{ADV}|我们|我|俺|咱们|咱)\s*)*"),
    link=re.compile(rf"\s*(?:{ADV}|{TIME})*"),
    name=re.compile(r"她|他"),
    not_names=NOT_NAMES,
    article=re.compile(r"(?!)"),
    honorifics=re.compile(r"(?:先生|女士|小姐|老师)$"),
    cased=False,
)

VALIDITY = Validity(
    present=re.compile(r"现在|目前|如今|现任|仍然|还在"),
    past=re.compile(r"以前|之前|过去|原来|曾经|从前|前任"),
    predicates={
        "lives_in": re.compile(r"住|搬|城市"),
        "works_at": re.compile(r"工作|上班|公司|单位"),
        "job_title": re.compile(r"职业|做什么工作"),
        "studies_at": re.compile(r"读书|上学|大学|学校"),
        "partner": re.compile(r"老公|老婆|丈夫|妻子|男朋友|女朋友|对象|结婚"),
    },
    sentences={
        "lives_in": "住在{o}",
        "works_at": "在{o}工作",
        "job_title": "是{o}",
        "studies_at": "在{o}读书",
        "partner": "伴侣是{o}",
        "sister": "姐妹：{o}",
        "brother": "兄弟：{o}",
        "mother": "母亲：{o}",
        "father": "父亲：{o}",
        "son": "儿子：{o}",
        "daughter": "女儿：{o}",
        "relative": "亲戚：{o}",
        "friend": "朋友：{o}",
        "colleague": "同事：{o}",
        "has_pet": "宠物叫{o}",
        "likes": "喜欢{o}",
        "dislikes": "不喜欢{o}",
    },
    others={
        "lives_in": "{s}住在{o}",
        "works_at": "{s}在{o}工作",
        "job_title": "{s}是{o}",
        "studies_at": "{s}在{o}读书",
    },
)

LEXICON = Lexicon(code="zh", cues=GRAMMAR, first_person=re.compile(r"我|俺|咱"), validity=VALIDITY)
