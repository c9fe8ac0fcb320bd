"""English: the words and patterns the relation reader walks English clauses with (graph/relations/ is the
engine and knows no language): kin, people, pets, jobs, the verb phrases and the predicates their kinds make,
openers, negation, question and hypothetical markers, times, what blocks a reading (pure data)."""

from __future__ import annotations

import re

from ..mentions import COMMON, MONTH_WORDS, WEEKDAY_WORDS
from .types import ClauseGrammar, Lexicon

# ----------------------------------------------------------------------------------------------- vocabulary

KIN = {
    "sister": "sister",
    "sis": "sister",
    "brother": "brother",
    "bro": "brother",
    "mom": "mother",
    "mum": "mother",
    "mother": "mother",
    "mommy": "mother",
    "mama": "mother",
    "dad": "father",
    "father": "father",
    "daddy": "father",
    "papa": "father",
    "son": "son",
    "daughter": "daughter",
    "wife": "partner",
    "husband": "partner",
    "partner": "partner",
    "boyfriend": "partner",
    "girlfriend": "partner",
    "fiance": "partner",
    "fiancé": "partner",
    "fiancée": "partner",
    "fiancee": "partner",
    "spouse": "partner",
    "friend": "friend",
    "bff": "friend",
    "bestie": "friend",
    "buddy": "friend",
    "pal": "friend",
    "cousin": "relative",
    "aunt": "relative",
    "auntie": "relative",
    "uncle": "relative",
    "grandma": "relative",
    "grandmother": "relative",
    "granny": "relative",
    "nana": "relative",
    "grandpa": "relative",
    "grandfather": "relative",
    "grandad": "relative",
    "granddad": "relative",
    "niece": "relative",
    "nephew": "relative",
    "grandson": "relative",
    "granddaughter": "relative",
    "stepmom": "mother",
    "stepdad": "father",
    "colleague": "colleague",
    "coworker": "colleague",
    "co-worker": "colleague",
    "workmate": "colleague",
}
# people a speaker introduces with no relation to them that the tier keeps ("my roommate Kofi")
PEOPLE = (
    "roommate",
    "flatmate",
    "housemate",
    "neighbor",
    "neighbour",
    "boss",
    "manager",
    "classmate",
    "teammate",
    "mentor",
    "landlord",
    "landlady",
    "ex",
    "tutor",
    "doctor",
    "therapist",
    "coach",
    "student",
    "client",
)
SHE = {
    "sister",
    "sis",
    "mom",
    "mum",
    "mother",
    "mommy",
    "mama",
    "daughter",
    "wife",
    "girlfriend",
    "fiancée",
    "aunt",
    "auntie",
    "grandma",
    "grandmother",
    "granny",
    "nana",
    "niece",
    "granddaughter",
    "stepmom",
    "landlady",
}
HE = {
    "brother",
    "bro",
    "dad",
    "father",
    "daddy",
    "papa",
    "son",
    "husband",
    "boyfriend",
    "fiancé",
    "uncle",
    "grandpa",
    "grandfather",
    "grandad",
    "granddad",
    "nephew",
    "grandson",
    "stepdad",
    "landlord",
}
PETS = (
    "dog",
    "dogs",
    "puppy",
    "puppies",
    "pup",
    "pups",
    "doggo",
    "cat",
    "cats",
    "kitten",
    "kittens",
    "kitty",
    "pet",
    "pets",
    "parrot",
    "bird",
    "birds",
    "hamster",
    "rabbit",
    "bunny",
    "horse",
    "pony",
    "turtle",
    "turtles",
    "tortoise",
    "fish",
    "goldfish",
    "snake",
    "lizard",
    "gecko",
    "iguana",
    "ferret",
    "chinchilla",
    "guinea pig",
    "guinea pigs",
    "budgie",
    "cockatiel",
    "canary",
    "retriever",
    "labrador",
    "lab",
    "poodle",
    "terrier",
    "husky",
    "corgi",
    "beagle",
    "bulldog",
    "shepherd",
    "dachshund",
    "chihuahua",
    "pug",
    "collie",
    "spaniel",
    "tabby",
    "greyhound",
    "rat",
    "mouse",
    "hedgehog",
)
JOBS = (
    "engineer",
    "developer",
    "dev",
    "programmer",
    "coder",
    "teacher",
    "nurse",
    "doctor",
    "physician",
    "surgeon",
    "dentist",
    "vet",
    "veterinarian",
    "designer",
    "manager",
    "artist",
    "writer",
    "author",
    "lawyer",
    "attorney",
    "chef",
    "cook",
    "baker",
    "barista",
    "bartender",
    "waiter",
    "waitress",
    "accountant",
    "scientist",
    "researcher",
    "consultant",
    "photographer",
    "musician",
    "singer",
    "counselor",
    "counsellor",
    "therapist",
    "psychologist",
    "psychiatrist",
    "firefighter",
    "pilot",
    "mechanic",
    "electrician",
    "plumber",
    "carpenter",
    "architect",
    "analyst",
    "journalist",
    "editor",
    "reporter",
    "professor",
    "lecturer",
    "tutor",
    "entrepreneur",
    "founder",
    "ceo",
    "cto",
    "cfo",
    "intern",
    "pharmacist",
    "paramedic",
    "officer",
    "cop",
    "soldier",
    "farmer",
    "driver",
    "cashier",
    "clerk",
    "secretary",
    "receptionist",
    "librarian",
    "translator",
    "interpreter",
    "coach",
    "trainer",
    "instructor",
    "dancer",
    "actor",
    "actress",
    "model",
    "streamer",
    "youtuber",
    "producer",
    "director",
    "guard",
    "player",
    "athlete",
    "paralegal",
    "banker",
    "broker",
    "realtor",
    "recruiter",
    "administrator",
    "technician",
    "specialist",
    "coordinator",
    "assistant",
    "associate",
    "salesperson",
    "cleaner",
    "nanny",
    "caregiver",
    "midwife",
    "economist",
    "statistician",
    "mathematician",
    "physicist",
    "chemist",
    "biologist",
    "geologist",
    "tester",
    "sysadmin",
    "illustrator",
    "animator",
    "copywriter",
    "marketer",
    "strategist",
    "advisor",
    "adviser",
    "auditor",
    "planner",
    "surveyor",
    "welder",
    "electrician",
    "hairdresser",
    "stylist",
    "tattooist",
    "butcher",
    "postman",
    "courier",
    "firefighter",
    "ranger",
    "guide",
    "curator",
    "chemist",
    "dietitian",
    "nutritionist",
    "optometrist",
    "physiotherapist",
    "radiologist",
    "anesthesiologist",
    "pediatrician",
    "scientist",
    "composer",
    "drummer",
    "guitarist",
    "pianist",
    "comedian",
    "podcaster",
    "influencer",
    "freelancer",
    "contractor",
    "executive",
    "owner",
)
# modifiers that make "a ___ <job>" something else than the job the person has
NOT_JOB = {
    "good",
    "great",
    "bad",
    "terrible",
    "decent",
    "amazing",
    "awful",
    "better",
    "best",
    "horrible",
    "natural",
    "born",
    "total",
    "real",
    "really",
    "very",
    "pretty",
    "super",
    "so",
    "huge",
    "big",
    "little",
    "wannabe",
    "aspiring",
    "future",
    "former",
    "retired",
    "ex",
    "would-be",
    "amateur",
    "trained",
    "failed",
    "frustrated",
    "budding",
    "fake",
    "not",
    "no",
    "bit",
    "kind",
    "sort",
    "home",
    "hobby",
    "weekend",
    "backseat",
}
# "joined X" where X is a platform is not a job
PLATFORMS = {
    "twitter",
    "x",
    "reddit",
    "discord",
    "instagram",
    "tiktok",
    "facebook",
    "strava",
    "duolingo",
    "linkedin",
    "mastodon",
    "bluesky",
    "patreon",
    "twitch",
    "youtube",
    "snapchat",
    "pinterest",
    "tinder",
    "bumble",
    "hinge",
    "threads",
    "whatsapp",
    "telegram",
    "signal",
    "slack",
    "tumblr",
    "goodreads",
    "letterboxd",
    "peloton",
    "onlyfans",
    "substack",
    "medium",
    "github",
    "steam",
    "xbox",
    "playstation",
    "netflix",
}
BINOMIALS = {
    "mac and cheese",
    "rock and roll",
    "fish and chips",
    "salt and pepper",
    "bread and butter",
    "arts and crafts",
    "dungeons and dragons",
    "pros and cons",
    "black and white",
    "sweet and sour",
    "rhythm and blues",
    "drum and bass",
    "hide and seek",
    "law and order",
    "pride and prejudice",
    "peanut butter and jelly",
    "cookies and cream",
    "surf and turf",
    "rice and beans",
    "pb and j",
    "tea and biscuits",
    "chips and salsa",
    "war and peace",
    "truth or dare",
    "rock n roll",
}
# a likes/dislikes object that says nothing on its own
VAGUE = {
    "it",
    "that",
    "this",
    "these",
    "those",
    "them",
    "you",
    "him",
    "her",
    "me",
    "us",
    "your",
    "yours",
    "his",
    "their",
    "theirs",
    "its",
    "my",
    "our",
    "how",
    "what",
    "when",
    "where",
    "why",
    "who",
    "which",
    "to",
    "there",
    "here",
    "all",
    "everything",
    "everyone",
    "everybody",
    "anything",
    "something",
    "nothing",
    "some",
    "any",
    "one",
    "so",
    "too",
    "lot",
    "lots",
    "way",
    "idea",
    "fact",
    "thought",
    "feeling",
    "if",
    "whatever",
    "both",
    "such",
    "such a",
    "ya",
    "u",
    "not",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "makes",
    "make",
    "get",
    "gets",
    "keeps",
    "has",
    "have",
    "had",
    "am",
    "y'all",
    "yall",
    "ur",
    "each",
    "every",
    "most",
    "more",
    "this one",
    "that one",
}
LIGHT = {
    "going",
    "doing",
    "getting",
    "having",
    "making",
    "taking",
    "trying",
    "seeing",
    "using",
    "coming",
    "looking",
    "being",
    "hearing",
    "knowing",
    "saying",
    "telling",
    "thinking",
    "talking",
    "working",
}

TIME_WORDS = {w for w in MONTH_WORDS | WEEKDAY_WORDS} | {
    "christmas",
    "easter",
    "thanksgiving",
    "halloween",
    "new year",
    "new years",
    "spring",
    "summer",
    "autumn",
    "fall",
    "winter",
    "today",
    "tonight",
    "tomorrow",
    "yesterday",
    "weekend",
}

# ----------------------------------------------------------------------------------------------- patterns

_CASELESS = "\u0590-\u05ff\u0600-\u06ff\u0900-\u097f\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_NWORD = rf"(?:(?:St|Mt|Ft|Dr|Mr|Mrs|Ms|Jr)\.|[A-Z][\w'’&-]*(?:\.[A-Z][\w'’&-]*)*|[{_CASELESS}]+)"
_JOIN = r"(?:of|the|de|da|del|di|van|von|la|le|du|y|&|and\s+the)"
NAME = rf"{_NWORD}(?:[ \t]+(?:{_JOIN}[ \t]+)?{_NWORD}){{0,4}}"
NAME_RX = re.compile(NAME)
PERSON_RX = re.compile(rf"[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*){{0,2}}|[{_CASELESS}]+")


def _alt(words) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=len, reverse=True))


_KIN_ALT = _alt(KIN)
_PEOPLE_ALT = _alt(PEOPLE)
_PET_ALT = _alt(PETS)
_JOB_ALT = _alt(JOBS)
_ADJ = (
    r"(?:(?:little|older|younger|big|baby|twin|eldest|oldest|youngest|best|new|lovely|dear|amazing|step|late|"
    r"childhood|old|good|favou?rite|awesome|wonderful|beautiful|sweet|other)\s+)"
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
DATE = re.compile(
    rf"(?i:{_MONTH})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?i:{_MONTH})\b(?:,?\s+\d{{4}})?"
)

# the words a subject and its verb may have between them: auxiliaries and a few adverbs (their kind noted)
FILL = re.compile(
    r"(?:[ \t]*(?:(?P<have>(?:['’]ve|have|has)(?![ \t]+(?:a|an|another|one|two|three|four|five|\d+)\b))|"
    r"(?P<neg>(?:n['’]t|not)(?![ \t]+(?:like|enjoy|stand|bear)\b)|"
    r"(?:don|doesn|didn|won|isn|aren|wasn|weren|haven|hasn)['’]t(?![ \t]+(?:like|enjoy)\b)|"
    r"can['’]t(?![ \t]+(?:stand|bear)\b)|cannot(?![ \t]+(?:stand|bear)\b)|never|no[ \t]+longer)|"
    r"(?P<be>['’]m|['’]re|['’]s|am|is|are|was|were|been)|"
    r"(?P<did>(?:do|does|did)(?![ \t]+not[ \t]+(?:like|enjoy)\b))|(?P<now>now)|"
    r"just|recently|finally|still|also|actually|officially|currently|"
    r"already|both|all|even|really|newly|basically|happily|originally|only|totally|absolutely|truly|"
    r"kinda|literally|so|super|honestly|always|seriously|lowkey|technically|then|too)\b)*[ \t]*",
    re.IGNORECASE,
)

# Verb phrases, tried where a subject's words end: (kind, pattern). Each pattern ends where its object starts.
_V = r"(?i:{})"
VERBS: list[tuple[str, re.Pattern[str]]] = [
    (k, re.compile(_V.format(p) + (r"" if k == "has_pet" else r"[ \t]+")))
    for k, p in [
        ("lives_used", r"used\s+to\s+live\s+(?:in|at)"),
        ("works_used", r"used\s+to\s+work\s+(?:at|for)"),
        ("likes_used", r"used\s+to\s+(?:love|like|enjoy|adore)"),
        ("lives", r"(?:live|lives|living|reside|resides|residing)\s+(?:(?:right|now)\s+)?(?:in|at)"),
        ("lives", r"(?:live|lives|living)\s+with\s+(?:[\w'’-]+\s+){1,4}?in"),
        ("lives_past", r"lived\s+(?:in|at)"),
        ("lives", r"(?:based|settled)\s+in"),
        ("moved_from", r"(?:moved|relocated)\s+(?:away\s+)?from"),
        ("lives", r"(?:moved|relocated)\s+(?:back\s+)?(?:to|into)"),
        ("works", r"(?:work|works|working)\s+(?:(?:full[- ]time|part[- ]time|remotely|now|there)\s+)?(?:at|for)"),
        ("works", r"(?:work|works|working)\s+(?:in|on)\s+[a-z]+(?:\s+[a-z]+)?\s+(?:at|for)"),
        ("works_past", r"worked\s+(?:(?:full[- ]time|part[- ]time|remotely)\s+)?(?:at|for)"),
        ("works", r"(?:teach|teaches|teaching)\s+(?:[a-z]+\s+){0,2}?at"),
        (
            "works",
            r"(?:start|started|starts|starting)\s+(?:(?:working|work|a\s+new\s+job|my\s+new\s+job|a\s+job|"
            r"the\s+job|my\s+job|an\s+internship|a\s+new\s+role|a\s+role|a\s+new\s+position)\s+)?(?:at|with)",
        ),
        (
            "works",
            r"(?:got|get|landed|found|took|accepted|started)\s+(?:a|my|the|an)\s+(?:(?:new|first|dream|full[- ]time|"
            r"part[- ]time|summer)\s+)*(?:job|position|role|internship|gig)\s+(?:at|with)",
        ),
        ("works", r"(?:got\s+)?(?:hired|employed)\s+(?:at|by)"),
        ("works", r"(?:love|like|enjoy|hate)\s+my\s+(?:new\s+)?job\s+(?:at|with)"),
        ("joined", r"(?:joined|joins)"),
        (
            "quit",
            r"(?:quit|quits|resigned\s+from|retired\s+from|stopped\s+working\s+(?:at|for)|"
            r"(?:got|was|were|been|just\s+got)\s+(?:laid\s+off|fired|let\s+go|sacked)\s+(?:from|by)|"
            r"(?:lost|quit|left)\s+(?:my|his|her|their|the)\s+(?:old\s+)?job\s+(?:at|with))",
        ),
        ("laid_off", r"(?:laid\s+off|fired|let\s+go)\s+(?:from|by)"),
        ("left", r"(?:left|leaves)"),
        (
            "studies",
            r"(?:(?:started|starting|start)\s+)?(?:study|studies|studying|enrolled|majoring|doing\s+(?:a|my)\s+"
            r"(?:degree|masters?|master's|phd|bachelor'?s))\s+(?:(?!at\b)[a-z'-]+\s+){0,3}?at",
        ),
        ("studies_past", r"studied\s+(?:(?!at\b)[a-z'-]+\s+){0,3}?at"),
        (
            "student",
            r"(?:a|an)\s+(?:[a-z]+\s+){0,2}?(?:student|undergrad|undergraduate|freshman|sophomore|postdoc|"
            r"fresher)\s+at",
        ),
        ("born", r"born\s+(?:and\s+raised\s+)?in"),
        ("born_on", r"born\s+on"),
        ("married", r"(?:married|marrying|dating|(?:engaged|married)\s+to|got\s+(?:engaged|married)\s+to|seeing)"),
        ("divorced", r"(?:divorced|broke\s+up\s+with|split\s+(?:up\s+)?(?:from|with)|separated\s+from)"),
        (
            "has_pet",
            r"(?:have|has|got|adopted|adopt|rescued|bought|own|owns|getting)\s+(?:a|an|another|one|two|three|four|"
            r"five|\d+)\s+(?:[\w-]+\s+){0,3}?(?:" + _PET_ALT + r")\b",
        ),
        (
            "title",
            r"(?:became|become|becomes|work\s+as|works\s+as|working\s+as|start(?:ed|ing|s)?\s+(?:out\s+)?as|"
            r"got\s+(?:the|a)\s+job\s+as|(?:got\s+)?hired\s+as|promoted\s+to|employed\s+as)",
        ),
        ("likes", r"(?:love|loves|like|likes|enjoy|enjoys|adore|adores|dig|fancy)"),
        (
            "likes_be",
            r"(?:into|obsessed\s+with|passionate\s+about|crazy\s+about|mad\s+about|addicted\s+to|"
            r"a\s+(?:(?:big|huge|massive|great|total|die[- ]hard)\s+)?fan\s+of)",
        ),
        ("likes", r"(?:(?:'ve|have|has)\s+)?(?:always\s+)?had\s+a\s+(?:love|passion|soft\s+spot|thing)\s+for"),
        ("likes", r"have\s+a\s+(?:soft\s+spot|passion|thing)\s+for"),
        (
            "dislikes",
            r"(?:hate|hates|dislike|dislikes|detest|detests|loathe|loathes|can['’]t\s+stand|cannot\s+stand|"
            r"can\s+not\s+stand|can['’]t\s+bear|(?:do|does)(?:n['’]t|\s+not)\s+(?:like|enjoy))",
        ),
    ]
]
BE_TITLE = re.compile(rf"(?i:a|an)[ \t]+(?P<o>(?:[a-z][\w-]*[ \t]+){{0,2}}(?i:{_JOB_ALT}))\b")
TITLE_ANY = re.compile(rf"(?:(?i:a|an)[ \t]+)?(?P<o>(?:[a-z][\w-]*[ \t]+){{0,2}}(?i:{_JOB_ALT}))\b")
PET_NAMES = re.compile(rf"(?:[ \t]*,[ \t]*|[ \t]+(?i:called|named)[ \t]+|[ \t]*:[ \t]*)(?P<o>{NAME})")
NAMED_LATER = re.compile(
    rf",?[ \t]+(?:and[ \t]+)?(?i:we|i|they|he|she)[ \t]+(?i:named|called)[ \t]+"
    rf"(?i:him|her|it|them)[ \t]+(?P<o>{NAME})"
)
AND_NAME = re.compile(rf"[ \t]*(?:,[ \t]*(?:and[ \t]+)?|[ \t]+(?:and|&)[ \t]+)(?P<o>{NAME})")
THEN_AT = re.compile(r"[ \t]+(?i:at|for|with)[ \t]+")
THEN_BASED = re.compile(r",?[ \t]+(?i:based|living)[ \t]+in[ \t]+")
AND_VERB = re.compile(r"[ \t]*(?:,[ \t]*)?(?:(?i:and|but|&|\+)[ \t]+)(?:(?i:then|now|also|still|later)[ \t]+)?")
CORRECTION = re.compile(
    r"[ \t]*[,;.!-]*[ \t]*(?i:no[ \t]*,?[ \t]*wait|wait[ \t]*,?[ \t]*no|wait|sorry|i[ \t]+mean(?:t)?|"
    r"or[ \t]+rather|rather|correction|scratch[ \t]+that|make[ \t]+that|oops)[ \t]*[,:!.-]*[ \t]*"
    r"(?:(?i:to|in|at|for)[ \t]+)?"
)
MODIFIED = re.compile(
    r"['’]?s?[ \t]+(?i:office|offices|branch|store|shop|campus|team|site|location|headquarters|hq|"
    r"plant|factory|department|division|area|region|suburbs|outskirts|airport|station|account|"
    r"version|fans?|style|food|trip|way)\b"
)
PLACE_INNER = re.compile(r"(?i:a|an|the|our|my)[ \t]+(?:[a-z'-]+[ \t]+){0,3}?(?i:in|near|outside(?:[ \t]+of)?)[ \t]+")

# what stops a subject's reading: negation, modality, hypotheticals, wishes, plans, hedges, reported speech
BLOCK = re.compile(
    r"n['’]t\b|\b(?:not|never|cannot|nobody|neither|nor|if|unless|whether|would|could|should|might|may|must|will|"
    r"shall|gonna|wanna|gotta|going\s+to|want|wants|wanted|hope|hopes|hoping|wish|wishes|wished|dream|dreams|"
    r"dreamed|dreamt|imagine|imagining|pretend|pretending|plan|plans|planning|planned|thinking|considering|"
    r"consider|about\s+to|supposed|trying|try|tried|almost|nearly|maybe|perhaps|probably|possibly|someday|"
    r"said|says|say|saying|told|tells|tell|asked|asks|ask|wonder|wonders|wondering|wondered|think|thinks|thought|"
    r"believe|believes|guess|heard|hear|claims|claimed|apparently|supposedly|rumou?red|pretends|when\s+will|"
    r"what\s+if|no\s+longer|instead\s+of|rather\s+than|expect|expecting|applying|applied|interview\w*|once)\b"
    r"|['’](?:d|ll)\b",
    re.IGNORECASE,
)
NEG_ONLY = re.compile(r"n['’]t\b|\b(?:not|no\s+longer)\b", re.IGNORECASE)
ANYMORE = re.compile(r"\b(?:anymore|any\s+more|any\s+longer)\b", re.IGNORECASE)
FUTURE = re.compile(
    r"\b(?:next|tomorrow|soon|later\s+this|in\s+(?:a|two|three|\d+)\s+(?:days?|weeks?|months?)|"
    r"from\s+(?:next|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|"
    r"april|may|june|july|august|september|october|november|december))\b",
    re.IGNORECASE,
)
QUESTION_START = re.compile(
    r"(?i:do|does|did|is|are|was|were|will|would|can|could|should|have|has|had|shall|may|"
    r"might|am|how|what|where|when|why|who|which|whose|isn['’]t|aren['’]t|don['’]t|"
    r"doesn['’]t|didn['’]t)\b"
)
HYPOTHETICAL_START = re.compile(
    r"(?i:if|unless|suppose|supposing|imagine|what\s+if|in\s+case|once|hypothetically|"
    r"assuming|whenever)\b"
)
OPENERS = re.compile(
    r"(?:[^\w]*(?i:omg|oh\s+my\s+god|oh|ok|okay|so+|well|btw|by\s+the\s+way|anyway|anyways|also|and|but|plus|"
    r"update|news|big\s+news|good\s+news|great\s+news|some\s+news|fun\s+fact|guess\s+what|honestly|actually|tbh|"
    r"fyi|yay|woo+hoo+|hey+|hi|yo|lol|lmao|haha+|ugh|um+|uh+|wow|whew|phew|hmm+|ps|edit|finally|officially|"
    r"alright|yeah|yes|yep|nah|ooh|aaa+h*|welp|sooo+|anyhow|real\s+talk|quick\s+update|life\s+update|"
    r"just\s+so\s+you\s+know|long\s+story\s+short)\b[\s,:;!.…-]*)+"
)
# subjectless chat lines ("Just moved to Dublin!", "Started at Zalando today"): the verbs that may open one
BARE = {
    "lives",
    "lives_past",
    "moved_from",
    "works",
    "works_past",
    "joined",
    "quit",
    "laid_off",
    "left",
    "studies",
    "title",
    "married",
    "divorced",
    "has_pet",
    "lives_used",
    "works_used",
}
NAME_NEXT = re.compile(r"(?:['’]s|(?<=['’]s))[ \t]+birthday\b|[ \t]*,[ \t]*who\b|[ \t]+who\b")
BE_NEXT = re.compile(r"(?i:a|an|into|obsessed|passionate|crazy|mad|addicted)\b")
BARE_VERB = re.compile(
    r"(?i:moved|relocated|lived|living|started|starting|joined|quit|left|got|just|been|working|"
    r"worked|studying|studied|married|divorced|broke|adopted|retired|lost|resigned|laid|fired|"
    r"finally|recently|officially|currently)\b"
)
BARE_START = re.compile(r"(?i:(?:just|finally|recently|officially|so|now|still|been|currently)\s+)*")
WE_KINDS = {"lives", "lives_past", "lives_used", "moved_from", "has_pet"}
UNKNOWN_NAME_KINDS = {"lives", "works", "studies", "born", "title_be", "moved_from", "quit", "joined"}

ANCHORS = re.compile(
    # "my sister Alice", "my dad, Frank,", "my best friend Priya", "our son Max", "my roommate Kofi"
    rf"(?P<kin>\b(?i:my|our)[ \t]+{_ADJ}{{0,2}}(?P<kinword>(?i:{_KIN_ALT}|{_PEOPLE_ALT}))(?P<plural>s)?\b)"
    # "my dog Rex", "our cat Miso", "my guinea pig Oscar"
    rf"|(?P<pet>\b(?i:my|our)[ \t]+{_ADJ}{{0,2}}(?:[\w-]+[ \t]+)?(?i:{_PET_ALT})\b)"
    # "my birthday"
    r"|(?P<bday>\b(?i:my|our)[ \t]+birthday\b)"
    # "Ana, my sister," / "Ana is my sister"
    rf"|(?P<appos>(?<![\w'’-])(?P<aname>[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)?)"
    rf"(?:[ \t]*,[ \t]*|[ \t]+(?:is|'s)[ \t]+)(?i:my|our)"
    rf"[ \t]+{_ADJ}{{0,2}}(?P<akin>(?i:{_KIN_ALT}|{_PET_ALT}))\b)"
    # "X and I", "me and X"
    rf"|(?P<pair>(?<![\w'’-])(?P<pname>[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)?)[ \t]+(?:and|&)[ \t]+(?:I|i|me)\b(?!['’]))"
    rf"|(?P<pair2>\b[Mm]e[ \t]+(?:and|&)[ \t]+(?P<p2name>[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)?))"
    r"|(?P<i>(?<![\w'’])[Ii](?:(?P<ic>['’](?:m|ve|d|ll|s))\b)?(?![\w'’]))"
    r"|(?P<we>\b[Ww]e(?:(?P<wec>['’](?:re|ve|d|ll))\b)?(?![\w'’]))"
    r"|(?P<pron>\b(?P<pronw>[Hh]e|[Ss]he)(?:(?P<pc>['’](?:s|d|ll))\b)?(?![\w'’]))"
    rf"|(?P<name>(?<![\w'’])(?:[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*){{0,2}}|[{_CASELESS}]+))"
)
KIN_RX = re.compile(rf"\b(?i:my|our)[ \t]+{_ADJ}{{0,2}}(?P<kinword>(?i:{_KIN_ALT}|{_PEOPLE_ALT}))(?P<plural>s)?\b")
ANY = re.compile(
    r"\b(?:[Ii]|[Mm]y|[Oo]ur|[Ww]e|[Mm]e|[Hh]e|[Ss]he)\b|(?<![\w'’-])[A-Z][\w'’-]*\s+(?:\w+\s+)?(?:lives?|moved|"
    r"works?|studies|is|was|has|got|quit|left|joined|started|loves|hates|likes|enjoys|married|relocated|"
    r"retired|teaches|'s|and)\b|^\W*(?i:just|finally|recently|moved|started|starting|joined|quit|left|"
    r"living|working|got|been)\b",
    re.MULTILINE,
)


SENT_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s|$)|\n+")
ABBREVIATIONS = {
    "st",
    "mt",
    "ft",
    "dr",
    "mr",
    "mrs",
    "ms",
    "jr",
    "sr",
    "prof",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "approx",
    "no",
}
CUTS = re.compile(r"[,;:()—–]")
CONJ_WORDS = (
    "and",
    "but",
    "so",
    "because",
    "cause",
    "although",
    "though",
    "while",
    "whereas",
    "plus",
    "then",
    "now",
    "yet",
)
CONJ_BEFORE = re.compile(rf"\b(?:{'|'.join(CONJ_WORDS)})$", re.IGNORECASE)
CONJ_CHARS = max(map(len, CONJ_WORDS))
THING = re.compile(
    r"(?:(?i:the|a|an)[ \t]+)?(?P<o>[\w'’-]+(?:[ \t]+(?!(?i:and|or|but|because|cause|so|when|if|while|though|although|"
    r"as|than|that|which|who|whose|where|since|until|with|at|in|on|for|from|to|about|during|after|before|into|by|"
    r"like|around|near|over|under|through|too|more|most|less|now|lately|anymore|every|each|today|tonight|yesterday|"
    r"again|either|right|haha|lol|very|really|sooo*|even|all|just|cuz|bc|is|are|was|were|it|you|me|them|this|these|"
    r"here|there)\b)[\w'’-]+){0,4})"
    r"(?=[ \t]*(?:[,.;:!?…)(\"”]|[ \t]-[ \t]|—|–|$|\n)|[ \t]+(?i:and|or|&|but|because|cause|so|when|if|while|though|"
    r"although|as|than|that|which|who|whose|where|since|until|with|at|in|on|for|from|to|about|during|after|before|"
    r"into|by|like|around|near|over|under|through|too|more|most|less|now|lately|anymore|every|each|today|tonight|"
    r"yesterday|again|either|right|haha|lol|very|really|sooo*|even|all|just|cuz|bc|is|are|was|were|it|you|me|them|"
    r"this|these|here|there|a\s+lot|lots|so\s+much|these\s+days)\b)"
)
CLAUSE_AFTER = re.compile(
    r"[ \t]+(?i:is|are|was|were|has|have|had|makes?|brings?|gets?|keeps?|helps?|lets?|feels?|"
    r"looks?|seems?|turned|tackles?|can|will|would)\b"
)
PRONOUN_AFTER = re.compile(r"[ \t]+(?i:them|it|him|her|you|me|us|this|that)\b")
ANCHOR_HERE = re.compile(r"(?:[Ii]|[Ww]e|[Ss]he|[Hh]e|[Mm]y|[Oo]ur)\b")
CLAUSE_END = re.compile(r"[.;!?…]|,[ \t]+(?:but|so|because)\b|[ \t]-[ \t]|—|–|\n")

# the words after which "X and I" still opens its clause (beside openers and the names of times)
PAIR_AFTER = frozenset(
    "and but so then now also plus because cause while though although yesterday tonight today recently finally "
    "lately last this next year years week weeks month months weekend night morning evening ago".split()
)

GRAMMAR = ClauseGrammar(
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    not_job=frozenset(NOT_JOB),
    platforms=frozenset(PLATFORMS),
    binomials=frozenset(BINOMIALS),
    vague=frozenset(VAGUE),
    light=frozenset(LIGHT),
    time_words=frozenset(TIME_WORDS),
    common=COMMON,
    pair_after=PAIR_AFTER,
    abbreviations=frozenset(ABBREVIATIONS),
    self_words=frozenset({"i", "i'm", "i've", "i'd", "i'll"}),
    pronoun_objects=frozenset({"him", "her", "them"}),
    name_words=frozenset({"will", "may"}),
    ignore_contractions=frozenset({"'d", "'ll"}),
    subject_keeps=frozenset({"", "'s"}),
    and_word="and",
    name=NAME,
    name_rx=NAME_RX,
    person_rx=PERSON_RX,
    date=DATE,
    sentence_end=SENT_END,
    clause_end=CLAUSE_END,
    conjunction_before=CONJ_BEFORE,
    conjunction_chars=CONJ_CHARS,
    anchors=ANCHORS,
    kin_rx=KIN_RX,
    any_subject=ANY,
    openers=OPENERS,
    question_start=QUESTION_START,
    question_not=re.compile(r"(?i:have|has|had)\s+(?:a|an|two|three|\d+)\b"),
    hypothetical_start=HYPOTHETICAL_START,
    bare=frozenset(BARE),
    bare_verb=BARE_VERB,
    bare_start=BARE_START,
    name_next=NAME_NEXT,
    be_next=BE_NEXT,
    kin_named=re.compile(
        r"(?:['’]s[ \t]+name[ \t]+is|[ \t]+is[ \t]+(?:called|named)|[ \t]*,?[ \t]+(?:called|named)|[ \t]*,)?[ \t]+"
    ),
    kin_more=re.compile(r"[ \t]+(?:and|&)[ \t]+(?=[A-Z])"),
    kin_rest=re.compile(r"[ \t]*,[ \t]*(?:who[ \t]+)?|[ \t]+who[ \t]+"),
    kin_pair=re.compile(r"[ \t]+(?:and|&)[ \t]+(?:I|me)\b(?!['’])"),
    pet_named=re.compile(
        rf"(?:['’]s[ \t]+name(?:[ \t]+is|['’]s)|[ \t]+is[ \t]+(?:called|named)|[ \t]*,?[ \t]+"
        rf"(?:called|named)|[ \t]*,)?[ \t]+(?P<o>{NAME})"
    ),
    birthday_after=re.compile(r"[ \t]+birthday\b"),
    birthday_is=re.compile(r"(?:['’]s|[ \t]+(?:is|was))?[ \t]+(?:(?i:on|the)[ \t]+)?"),
    comma=re.compile(r"[ \t]*,[ \t]*"),
    possessives=("'s", "’s"),
    kin_owner=("my", "our"),
    we_kinds=frozenset(WE_KINDS),
    unknown_name_kinds=frozenset(UNKNOWN_NAME_KINDS),
    fill=FILL,
    verbs=tuple(VERBS),
    be_kinds=("likes_be", "student"),
    be_title=BE_TITLE,
    title_any=TITLE_ANY,
    the=re.compile(r"(?i:the)[ \t]+"),
    modified=MODIFIED,
    place_inner=PLACE_INNER,
    correction=CORRECTION,
    pet_names=PET_NAMES,
    named_later=NAMED_LATER,
    and_name=AND_NAME,
    then_at=THEN_AT,
    then_based=THEN_BASED,
    and_verb=AND_VERB,
    to_place=re.compile(r"[ \t]+(?:to|into)[ \t]+"),
    joined_group=re.compile(
        r"[ \t]+(?i:group|club|team|class|community|forum|gym|league|server|channel|program|band|choir|crew|chat)\b"
    ),
    left_job=re.compile(
        r"[ \t]+(?:(?:and|to)[ \t]+(?:\w+[ \t]+)?(?:join|joined|start|started|work|working)\b|for[ \t]+[A-Z])"
    ),
    thing=THING,
    thing_tail=re.compile(r"(?:[ \t]+(?i:of))+$"),
    thing_more=re.compile(r"[ \t]*(?:,[ \t]*(?:and[ \t]+|or[ \t]+)?|[ \t]+(?:and|or|&)[ \t]+)"),
    thing_pair=re.compile(r"[ \t]+(?:and|or|&)[ \t]+([\w'’-]+(?:[ \t]+[\w'’-]+)?)"),
    article=re.compile(r"^(?i:the|a|an)\s+"),
    gerund="ing",
    past_be=frozenset({"was", "were"}),
    clause_after=CLAUSE_AFTER,
    pronoun_after=PRONOUN_AFTER,
    anchor_here=ANCHOR_HERE,
    block=BLOCK,
    neg_only=NEG_ONLY,
    anymore=ANYMORE,
    no_longer=re.compile(r"\bno\s+longer\b", re.IGNORECASE),
    future=FUTURE,
)

LEXICON = Lexicon(code="en", clauses=GRAMMAR, first_person=re.compile(r"\b(?:I|I'm|I've|my|My|me)\b"))
