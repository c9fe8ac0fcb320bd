"""The offline relation tier, pure: the personal relations people state in chat, read clause by clause.

What it reads (docs/graph.md, "What the offline tier reads"):
- subjects: "I" (also "i"), "we" and "our" (the speaker's household: lives_in and has_pet only), the people the
  speaker introduces ("my sister Alice", "Ana, my sister,", "Ana is my sister", "my best friend Priya, who
  ..."), people the user's graph already knows by name, "he"/"she" for the one person introduced in the
  same message, and "X and I"; a chat line without a subject ("Just moved to Dublin!") is the speaker's;
- after openers and discourse markers ("Big news:", "omg", "so", "btw", "honestly", "actually"), which
  simply come before a subject;
- coordinated predicates and objects ("I live in Berlin and work at Siemens", "I love hiking and
  climbing", "I have two cats, Salem and Luna");
- changes told as events: quit / left / retired from / lost my job at / used to ... / no longer ...
  (the relation `ended`), joined / started at / got the job as / moved to / relocated to (a new one,
  which closes the older single-valued relation);
- a correction in the same breath ("I moved to Lisbon, no wait, Porto": Porto only).

Precision first: a question, a negation, a hypothetical, a wish or plan, a future, a hedge ("I think")
and reported speech ("my friend asked if I live in Oslo") make nothing current. The words between a
subject and its verb must be ones the tier knows (auxiliaries, a few adverbs), so an unknown construction
makes nothing rather than something wrong.

Each found relation names its subject (None: the speaker), the predicate, the object as written, whether
the statement says it no longer holds (`ended`), and whether the predicate holds one value at a time (a
new one closes the old: lives_in, works_at, partner, ...), so history and "as of" questions stay answerable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from .mentions import COMMON, MONTH_WORDS, WEEKDAY_WORDS

# predicate -> (single-valued, the type of an object entity)
PREDICATES: dict[str, tuple[bool, str]] = {
    "lives_in": (True, "place"),
    "works_at": (True, "organisation"),
    "job_title": (True, "other"),
    "studies_at": (True, "organisation"),
    "partner": (True, "person"),
    "sister": (False, "person"),
    "brother": (False, "person"),
    "mother": (True, "person"),
    "father": (True, "person"),
    "son": (False, "person"),
    "daughter": (False, "person"),
    "relative": (False, "person"),  # cousin, aunt, uncle, grandparent, niece, nephew
    "friend": (False, "person"),
    "colleague": (False, "person"),
    "has_pet": (False, "other"),  # a named animal
    "likes": (False, "thing"),
    "dislikes": (False, "thing"),
    "born_in": (True, "place"),
    "birthday": (True, "date"),
}

# how a relation reads as a fact (third person, no name), to find the same fact among the user's
AS_FACT = {"lives_in": "Lives in {}", "works_at": "Works at {}", "job_title": "Works as a {}",
           "studies_at": "Studies at {}", "partner": "Partner is {}", "sister": "Has a sister, {}",
           "brother": "Has a brother, {}", "mother": "Mother is {}", "father": "Father is {}", "son": "Has a son, {}",
           "daughter": "Has a daughter, {}", "relative": "Has a relative, {}", "friend": "Is friends with {}",
           "colleague": "Works with {}", "has_pet": "Has a pet named {}", "likes": "Likes {}",
           "dislikes": "Dislikes {}", "born_in": "Was born in {}", "birthday": "Birthday is {}"}


@dataclass(frozen=True)
class FoundRelation:
    predicate: str
    object: str
    start: int  # where the object starts in the text
    end: int
    subject: str | None = None  # None: the speaker; else a person's name as written
    ended: bool = False  # the statement says it no longer holds ("I quit X", "I used to live in X")

    @property
    def single_valued(self) -> bool:
        return PREDICATES[self.predicate][0]

    @property
    def object_type(self) -> str:
        return PREDICATES[self.predicate][1]


# ----------------------------------------------------------------------------------------------- vocabulary

KIN = {"sister": "sister", "sis": "sister", "brother": "brother", "bro": "brother", "mom": "mother", "mum": "mother",
       "mother": "mother", "mommy": "mother", "mama": "mother", "dad": "father", "father": "father", "daddy": "father",
       "papa": "father", "son": "son", "daughter": "daughter", "wife": "partner", "husband": "partner",
       "partner": "partner", "boyfriend": "partner", "girlfriend": "partner", "fiance": "partner", "fiancé": "partner",
       "fiancée": "partner", "fiancee": "partner", "spouse": "partner", "friend": "friend", "bff": "friend",
       "bestie": "friend", "buddy": "friend", "pal": "friend", "cousin": "relative", "aunt": "relative",
       "auntie": "relative", "uncle": "relative", "grandma": "relative", "grandmother": "relative",
       "granny": "relative", "nana": "relative", "grandpa": "relative", "grandfather": "relative",
       "grandad": "relative", "granddad": "relative", "niece": "relative", "nephew": "relative",
       "grandson": "relative", "granddaughter": "relative", "stepmom": "mother", "stepdad": "father",
       "colleague": "colleague", "coworker": "colleague", "co-worker": "colleague", "workmate": "colleague"}
# people a speaker introduces with no relation to them that the tier keeps ("my roommate Kofi")
PEOPLE = ("roommate", "flatmate", "housemate", "neighbor", "neighbour", "boss", "manager", "classmate", "teammate",
          "mentor", "landlord", "landlady", "ex", "tutor", "doctor", "therapist", "coach", "student", "client")
_SHE = {"sister", "sis", "mom", "mum", "mother", "mommy", "mama", "daughter", "wife", "girlfriend", "fiancée",
        "aunt", "auntie", "grandma", "grandmother", "granny", "nana", "niece", "granddaughter", "stepmom", "landlady"}
_HE = {"brother", "bro", "dad", "father", "daddy", "papa", "son", "husband", "boyfriend", "fiancé", "uncle", "grandpa",
       "grandfather", "grandad", "granddad", "nephew", "grandson", "stepdad", "landlord"}
_PETS = ("dog", "dogs", "puppy", "puppies", "pup", "pups", "doggo", "cat", "cats", "kitten", "kittens", "kitty", "pet",
         "pets", "parrot", "bird", "birds", "hamster", "rabbit", "bunny", "horse", "pony", "turtle", "turtles",
         "tortoise", "fish", "goldfish", "snake", "lizard", "gecko", "iguana", "ferret", "chinchilla", "guinea pig",
         "guinea pigs", "budgie", "cockatiel", "canary", "retriever", "labrador", "lab", "poodle", "terrier", "husky",
         "corgi", "beagle", "bulldog", "shepherd", "dachshund", "chihuahua", "pug", "collie", "spaniel", "tabby",
         "greyhound", "rat", "mouse", "hedgehog")
_JOBS = (
    "engineer", "developer", "dev", "programmer", "coder", "teacher", "nurse", "doctor", "physician", "surgeon",
    "dentist", "vet", "veterinarian", "designer", "manager", "artist", "writer", "author", "lawyer", "attorney",
    "chef", "cook", "baker", "barista", "bartender", "waiter", "waitress", "accountant", "scientist", "researcher",
    "consultant", "photographer", "musician", "singer", "counselor", "counsellor", "therapist", "psychologist",
    "psychiatrist", "firefighter", "pilot", "mechanic", "electrician", "plumber", "carpenter", "architect", "analyst",
    "journalist", "editor", "reporter", "professor", "lecturer", "tutor", "entrepreneur", "founder", "ceo", "cto",
    "cfo", "intern", "pharmacist", "paramedic", "officer", "cop", "soldier", "farmer", "driver", "cashier", "clerk",
    "secretary", "receptionist", "librarian", "translator", "interpreter", "coach", "trainer", "instructor", "dancer",
    "actor", "actress", "model", "streamer", "youtuber", "producer", "director", "guard", "player", "athlete",
    "paralegal", "banker", "broker", "realtor", "recruiter", "administrator", "technician", "specialist",
    "coordinator", "assistant", "associate", "salesperson", "cleaner", "nanny", "caregiver", "midwife", "economist",
    "statistician", "mathematician", "physicist", "chemist", "biologist", "geologist", "tester", "sysadmin",
    "illustrator", "animator", "copywriter", "marketer", "strategist", "advisor", "adviser", "auditor", "planner",
    "surveyor", "welder", "electrician", "hairdresser", "stylist", "tattooist", "butcher", "postman", "courier",
    "firefighter", "ranger", "guide", "curator", "chemist", "dietitian", "nutritionist", "optometrist",
    "physiotherapist", "radiologist", "anesthesiologist", "pediatrician", "scientist", "composer", "drummer",
    "guitarist", "pianist", "comedian", "podcaster", "influencer", "freelancer", "contractor", "executive", "owner",
)
# modifiers that make "a ___ <job>" something else than the job the person has
_NOT_JOB = {"good", "great", "bad", "terrible", "decent", "amazing", "awful", "better", "best", "horrible", "natural",
            "born", "total", "real", "really", "very", "pretty", "super", "so", "huge", "big", "little", "wannabe",
            "aspiring", "future", "former", "retired", "ex", "would-be", "amateur", "trained", "failed", "frustrated",
            "budding", "fake", "not", "no", "bit", "kind", "sort", "home", "hobby", "weekend", "backseat"}
# "joined X" where X is a platform is not a job
_PLATFORMS = {"twitter", "x", "reddit", "discord", "instagram", "tiktok", "facebook", "strava", "duolingo", "linkedin",
              "mastodon", "bluesky", "patreon", "twitch", "youtube", "snapchat", "pinterest", "tinder", "bumble",
              "hinge", "threads", "whatsapp", "telegram", "signal", "slack", "tumblr", "goodreads", "letterboxd",
              "peloton", "onlyfans", "substack", "medium", "github", "steam", "xbox", "playstation", "netflix"}
_BINOMIALS = {"mac and cheese", "rock and roll", "fish and chips", "salt and pepper", "bread and butter",
              "arts and crafts", "dungeons and dragons", "pros and cons", "black and white", "sweet and sour",
              "rhythm and blues", "drum and bass", "hide and seek", "law and order", "pride and prejudice",
              "peanut butter and jelly", "cookies and cream", "surf and turf", "rice and beans", "pb and j",
              "tea and biscuits", "chips and salsa", "war and peace", "truth or dare", "rock n roll"}
# a likes/dislikes object that says nothing on its own
_VAGUE = {"it", "that", "this", "these", "those", "them", "you", "him", "her", "me", "us", "your", "yours", "his",
          "their", "theirs", "its", "my", "our", "how", "what", "when", "where", "why", "who", "which", "to", "there",
          "here", "all", "everything", "everyone", "everybody", "anything", "something", "nothing", "some", "any",
          "one", "so", "too", "lot", "lots", "way", "idea", "fact", "thought", "feeling", "if", "whatever", "both",
          "such", "such a", "ya", "u", "not", "is", "are", "was", "were", "be", "been", "makes",
          "make", "get", "gets", "keeps", "has", "have", "had", "am", "y'all", "yall", "ur", "each", "every", "most", "more", "this one", "that one"}
_LIGHT = {"going", "doing", "getting", "having", "making", "taking", "trying", "seeing", "using", "coming", "looking",
          "being", "hearing", "knowing", "saying", "telling", "thinking", "talking", "working"}

_TIME_WORDS = {w for w in MONTH_WORDS | WEEKDAY_WORDS} | {
    "christmas", "easter", "thanksgiving", "halloween", "new year", "new years", "spring", "summer", "autumn", "fall",
    "winter", "today", "tonight", "tomorrow", "yesterday", "weekend"}

# ----------------------------------------------------------------------------------------------- patterns

_CASELESS = "\u0590-\u05ff\u0600-\u06ff\u0900-\u097f\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_NWORD = rf"(?:(?:St|Mt|Ft|Dr|Mr|Mrs|Ms|Jr)\.|[A-Z][\w'’&-]*(?:\.[A-Z][\w'’&-]*)*|[{_CASELESS}]+)"
_JOIN = r"(?:of|the|de|da|del|di|van|von|la|le|du|y|&|and\s+the)"
_NAME = rf"{_NWORD}(?:[ \t]+(?:{_JOIN}[ \t]+)?{_NWORD}){{0,4}}"
_NAME_RX = re.compile(_NAME)
_PERSON_RX = re.compile(rf"[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*){{0,2}}|[{_CASELESS}]+")


def _alt(words) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(set(words), key=len, reverse=True))


_KIN_ALT = _alt(KIN)
_PEOPLE_ALT = _alt(PEOPLE)
_PET_ALT = _alt(_PETS)
_JOB_ALT = _alt(_JOBS)
_ADJ = r"(?:(?:little|older|younger|big|baby|twin|eldest|oldest|youngest|best|new|lovely|dear|amazing|step|late|" \
       r"childhood|old|good|favou?rite|awesome|wonderful|beautiful|sweet|other)\s+)"
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DATE = re.compile(rf"(?i:{_MONTH})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b|"
                   rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?i:{_MONTH})\b(?:,?\s+\d{{4}})?")

# the words a subject and its verb may have between them: auxiliaries and a few adverbs (their kind noted)
_FILL = re.compile(r"(?:[ \t]*(?:(?P<have>(?:['’]ve|have|has)(?![ \t]+(?:a|an|another|one|two|three|four|five|\d+)\b))|(?P<neg>(?:n['’]t|not)(?![ \t]+(?:like|enjoy|stand|bear)\b)|"
                   r"(?:don|doesn|didn|won|isn|aren|wasn|weren|haven|hasn)['’]t(?![ \t]+(?:like|enjoy)\b)|"
                   r"can['’]t(?![ \t]+(?:stand|bear)\b)|cannot(?![ \t]+(?:stand|bear)\b)|never|no[ \t]+longer)|(?P<be>['’]m|['’]re|['’]s|am|is|are|was|were|been)|"
                   r"(?P<did>(?:do|does|did)(?![ \t]+not[ \t]+(?:like|enjoy)\b))|(?P<now>now)|just|recently|finally|still|also|actually|officially|currently|"
                   r"already|both|all|even|really|newly|basically|happily|originally|only|totally|absolutely|truly|"
                   r"kinda|literally|so|super|honestly|always|seriously|lowkey|technically|then|too)\b)*[ \t]*",
                   re.IGNORECASE)

# Verb phrases, tried where a subject's words end: (kind, pattern). Each pattern ends where its object starts.
_V = r"(?i:{})"
_VERBS: list[tuple[str, re.Pattern[str]]] = [(k, re.compile(_V.format(p) + (r"" if k == "has_pet" else r"[ \t]+")))
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
    ("works", r"(?:start|started|starts|starting)\s+(?:(?:working|work|a\s+new\s+job|my\s+new\s+job|a\s+job|"
              r"the\s+job|my\s+job|an\s+internship|a\s+new\s+role|a\s+role|a\s+new\s+position)\s+)?(?:at|with)"),
    ("works", r"(?:got|get|landed|found|took|accepted|started)\s+(?:a|my|the|an)\s+(?:(?:new|first|dream|full[- ]time|"
              r"part[- ]time|summer)\s+)*(?:job|position|role|internship|gig)\s+(?:at|with)"),
    ("works", r"(?:got\s+)?(?:hired|employed)\s+(?:at|by)"),
    ("works", r"(?:love|like|enjoy|hate)\s+my\s+(?:new\s+)?job\s+(?:at|with)"),
    ("joined", r"(?:joined|joins)"),
    ("quit", r"(?:quit|quits|resigned\s+from|retired\s+from|stopped\s+working\s+(?:at|for)|"
             r"(?:got|was|were|been|just\s+got)\s+(?:laid\s+off|fired|let\s+go|sacked)\s+(?:from|by)|"
             r"(?:lost|quit|left)\s+(?:my|his|her|their|the)\s+(?:old\s+)?job\s+(?:at|with))"),
    ("laid_off", r"(?:laid\s+off|fired|let\s+go)\s+(?:from|by)"),
    ("left", r"(?:left|leaves)"),
    ("studies", r"(?:(?:started|starting|start)\s+)?(?:study|studies|studying|enrolled|majoring|doing\s+(?:a|my)\s+"
                r"(?:degree|masters?|master's|phd|bachelor'?s))\s+(?:(?!at\b)[a-z'-]+\s+){0,3}?at"),
    ("studies_past", r"studied\s+(?:(?!at\b)[a-z'-]+\s+){0,3}?at"),
    ("student", r"(?:a|an)\s+(?:[a-z]+\s+){0,2}?(?:student|undergrad|undergraduate|freshman|sophomore|postdoc|"
                r"fresher)\s+at"),
    ("born", r"born\s+(?:and\s+raised\s+)?in"),
    ("born_on", r"born\s+on"),
    ("married", r"(?:married|marrying|dating|(?:engaged|married)\s+to|got\s+(?:engaged|married)\s+to|seeing)"),
    ("divorced", r"(?:divorced|broke\s+up\s+with|split\s+(?:up\s+)?(?:from|with)|separated\s+from)"),
    ("has_pet", r"(?:have|has|got|adopted|adopt|rescued|bought|own|owns|getting)\s+(?:a|an|another|one|two|three|four|"
                r"five|\d+)\s+(?:[\w-]+\s+){0,3}?(?:" + _PET_ALT + r")\b"),
    ("title", r"(?:became|become|becomes|work\s+as|works\s+as|working\s+as|start(?:ed|ing|s)?\s+(?:out\s+)?as|"
              r"got\s+(?:the|a)\s+job\s+as|(?:got\s+)?hired\s+as|promoted\s+to|employed\s+as)"),
    ("likes", r"(?:love|loves|like|likes|enjoy|enjoys|adore|adores|dig|fancy)"),
    ("likes_be", r"(?:into|obsessed\s+with|passionate\s+about|crazy\s+about|mad\s+about|addicted\s+to|"
                 r"a\s+(?:(?:big|huge|massive|great|total|die[- ]hard)\s+)?fan\s+of)"),
    ("likes", r"(?:(?:'ve|have|has)\s+)?(?:always\s+)?had\s+a\s+(?:love|passion|soft\s+spot|thing)\s+for"),
    ("likes", r"have\s+a\s+(?:soft\s+spot|passion|thing)\s+for"),
    ("dislikes", r"(?:hate|hates|dislike|dislikes|detest|detests|loathe|loathes|can['’]t\s+stand|cannot\s+stand|"
                 r"can\s+not\s+stand|can['’]t\s+bear|(?:do|does)(?:n['’]t|\s+not)\s+(?:like|enjoy))"),
]]
_BE_TITLE = re.compile(rf"(?i:a|an)[ \t]+(?P<o>(?:[a-z][\w-]*[ \t]+){{0,2}}(?i:{_JOB_ALT}))\b")
_TITLE_ANY = re.compile(rf"(?:(?i:a|an)[ \t]+)?(?P<o>(?:[a-z][\w-]*[ \t]+){{0,2}}(?i:{_JOB_ALT}))\b")
_PET_NAMES = re.compile(rf"(?:[ \t]*,[ \t]*|[ \t]+(?i:called|named)[ \t]+|[ \t]*:[ \t]*)(?P<o>{_NAME})")
_NAMED_LATER = re.compile(rf",?[ \t]+(?:and[ \t]+)?(?i:we|i|they|he|she)[ \t]+(?i:named|called)[ \t]+"
                          rf"(?i:him|her|it|them)[ \t]+(?P<o>{_NAME})")
_AND_NAME = re.compile(rf"[ \t]*(?:,[ \t]*(?:and[ \t]+)?|[ \t]+(?:and|&)[ \t]+)(?P<o>{_NAME})")
_THEN_AT = re.compile(r"[ \t]+(?i:at|for|with)[ \t]+")
_THEN_BASED = re.compile(r",?[ \t]+(?i:based|living)[ \t]+in[ \t]+")
_AND_VERB = re.compile(r"[ \t]*(?:,[ \t]*)?(?:(?i:and|but|&|\+)[ \t]+)(?:(?i:then|now|also|still|later)[ \t]+)?")
_CORRECTION = re.compile(r"[ \t]*[,;.!-]*[ \t]*(?i:no[ \t]*,?[ \t]*wait|wait[ \t]*,?[ \t]*no|wait|sorry|i[ \t]+mean(?:t)?|"
                         r"or[ \t]+rather|rather|correction|scratch[ \t]+that|make[ \t]+that|oops)[ \t]*[,:!.-]*[ \t]*"
                         r"(?:(?i:to|in|at|for)[ \t]+)?")
_MODIFIED = re.compile(r"['’]?s?[ \t]+(?i:office|offices|branch|store|shop|campus|team|site|location|headquarters|hq|"
                       r"plant|factory|department|division|area|region|suburbs|outskirts|airport|station|account|"
                       r"version|fans?|style|food|trip|way)\b")
_PLACE_INNER = re.compile(r"(?i:a|an|the|our|my)[ \t]+(?:[a-z'-]+[ \t]+){0,3}?(?i:in|near|outside(?:[ \t]+of)?)[ \t]+")

# what stops a subject's reading: negation, modality, hypotheticals, wishes, plans, hedges, reported speech
_BLOCK = re.compile(
    r"n['’]t\b|\b(?:not|never|cannot|nobody|neither|nor|if|unless|whether|would|could|should|might|may|must|will|"
    r"shall|gonna|wanna|gotta|going\s+to|want|wants|wanted|hope|hopes|hoping|wish|wishes|wished|dream|dreams|"
    r"dreamed|dreamt|imagine|imagining|pretend|pretending|plan|plans|planning|planned|thinking|considering|"
    r"consider|about\s+to|supposed|trying|try|tried|almost|nearly|maybe|perhaps|probably|possibly|someday|"
    r"said|says|say|saying|told|tells|tell|asked|asks|ask|wonder|wonders|wondering|wondered|think|thinks|thought|"
    r"believe|believes|guess|heard|hear|claims|claimed|apparently|supposedly|rumou?red|pretends|when\s+will|"
    r"what\s+if|no\s+longer|instead\s+of|rather\s+than|expect|expecting|applying|applied|interview\w*|once)\b"
    r"|['’](?:d|ll)\b", re.IGNORECASE)
_NEG = re.compile(r"n['’]t\b|\b(?:not|never|no\s+longer|cannot)\b", re.IGNORECASE)
_NEG_ONLY = re.compile(r"n['’]t\b|\b(?:not|no\s+longer)\b", re.IGNORECASE)
_ANYMORE = re.compile(r"\b(?:anymore|any\s+more|any\s+longer)\b", re.IGNORECASE)
_FUTURE = re.compile(r"\b(?:next|tomorrow|soon|later\s+this|in\s+(?:a|two|three|\d+)\s+(?:days?|weeks?|months?)|"
                     r"from\s+(?:next|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|"
                     r"april|may|june|july|august|september|october|november|december))\b", re.IGNORECASE)
_QUESTION_START = re.compile(r"(?i:do|does|did|is|are|was|were|will|would|can|could|should|have|has|had|shall|may|"
                             r"might|am|how|what|where|when|why|who|which|whose|isn['’]t|aren['’]t|don['’]t|"
                             r"doesn['’]t|didn['’]t)\b")
_HYPOTHETICAL_START = re.compile(r"(?i:if|unless|suppose|supposing|imagine|what\s+if|in\s+case|once|hypothetically|"
                                 r"assuming|whenever)\b")
_OPENERS = re.compile(
    r"(?:[^\w]*(?i:omg|oh\s+my\s+god|oh|ok|okay|so+|well|btw|by\s+the\s+way|anyway|anyways|also|and|but|plus|"
    r"update|news|big\s+news|good\s+news|great\s+news|some\s+news|fun\s+fact|guess\s+what|honestly|actually|tbh|"
    r"fyi|yay|woo+hoo+|hey+|hi|yo|lol|lmao|haha+|ugh|um+|uh+|wow|whew|phew|hmm+|ps|edit|finally|officially|"
    r"alright|yeah|yes|yep|nah|ooh|aaa+h*|welp|sooo+|anyhow|real\s+talk|quick\s+update|life\s+update|"
    r"just\s+so\s+you\s+know|long\s+story\s+short)\b[\s,:;!.…-]*)+")
# subjectless chat lines ("Just moved to Dublin!", "Started at Zalando today"): the verbs that may open one
_BARE = {"lives", "lives_past", "moved_from", "works", "works_past", "joined", "quit", "laid_off", "left", "studies",
         "title", "married", "divorced", "has_pet", "lives_used", "works_used"}
_NAME_NEXT = re.compile(r"(?:['’]s|(?<=['’]s))[ \t]+birthday\b|[ \t]*,[ \t]*who\b|[ \t]+who\b")
_BE_NEXT = re.compile(r"(?i:a|an|into|obsessed|passionate|crazy|mad|addicted)\b")
_BARE_VERB = re.compile(r"(?i:moved|relocated|lived|living|started|starting|joined|quit|left|got|just|been|working|"
                        r"worked|studying|studied|married|divorced|broke|adopted|retired|lost|resigned|laid|fired|"
                        r"finally|recently|officially|currently)\b")
_BARE_START = re.compile(r"(?i:(?:just|finally|recently|officially|so|now|still|been|currently)\s+)*")
_WE_KINDS = {"lives", "lives_past", "lives_used", "moved_from", "has_pet"}
_UNKNOWN_NAME_KINDS = {"lives", "works", "studies", "born", "title_be", "moved_from", "quit", "joined"}

_ANCHORS = re.compile(
    # "my sister Alice", "my dad, Frank,", "my best friend Priya", "our son Max", "my roommate Kofi"
    rf"(?P<kin>\b(?i:my|our)[ \t]+{_ADJ}{{0,2}}(?P<kinword>(?i:{_KIN_ALT}|{_PEOPLE_ALT}))(?P<plural>s)?\b)"
    # "my dog Rex", "our cat Miso", "my guinea pig Oscar"
    rf"|(?P<pet>\b(?i:my|our)[ \t]+{_ADJ}{{0,2}}(?:[\w-]+[ \t]+)?(?i:{_PET_ALT})\b)"
    # "my birthday"
    r"|(?P<bday>\b(?i:my|our)[ \t]+birthday\b)"
    # "Ana, my sister," / "Ana is my sister"
    rf"|(?P<appos>(?P<aname>[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)?)(?:[ \t]*,[ \t]*|[ \t]+(?:is|'s)[ \t]+)(?i:my|our)"
    rf"[ \t]+{_ADJ}{{0,2}}(?P<akin>(?i:{_KIN_ALT}|{_PET_ALT}))\b)"
    # "X and I", "me and X"
    rf"|(?P<pair>(?P<pname>[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)?)[ \t]+(?:and|&)[ \t]+(?:I|i|me)\b(?!['’]))"
    rf"|(?P<pair2>\b[Mm]e[ \t]+(?:and|&)[ \t]+(?P<p2name>[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*)?))"
    r"|(?P<i>(?<![\w'’])[Ii](?:(?P<ic>['’](?:m|ve|d|ll|s))\b)?(?![\w'’]))"
    r"|(?P<we>\b[Ww]e(?:(?P<wec>['’](?:re|ve|d|ll))\b)?(?![\w'’]))"
    r"|(?P<pron>\b(?P<pronw>[Hh]e|[Ss]he)(?:(?P<pc>['’](?:s|d|ll))\b)?(?![\w'’]))"
    rf"|(?P<name>(?<![\w'’])(?:[A-Z][\w'’-]*(?:[ \t]+[A-Z][\w'’-]*){{0,2}}|[{_CASELESS}]+))")
_KIN_RX = re.compile(rf"\b(?i:my|our)[ \t]+{_ADJ}{{0,2}}(?P<kinword>(?i:{_KIN_ALT}|{_PEOPLE_ALT}))(?P<plural>s)?\b")
_ANY = re.compile(r"\b(?:[Ii]|[Mm]y|[Oo]ur|[Ww]e|[Mm]e|[Hh]e|[Ss]he)\b|[A-Z][\w'’-]*\s+(?:\w+\s+)?(?:lives?|moved|"
                  r"works?|studies|is|was|has|got|quit|left|joined|started|loves|hates|likes|enjoys|married|relocated|"
                  r"retired|teaches|'s|and)\b|^\W*(?i:just|finally|recently|moved|started|starting|joined|quit|left|"
                  r"living|working|got|been)\b", re.MULTILINE)


# ----------------------------------------------------------------------------------------------- helpers

def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip(" .,;:!?\"'’")


_SENT_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s|$)|\n+")
_ABBREV = {"st", "mt", "ft", "dr", "mr", "mrs", "ms", "jr", "sr", "prof", "vs", "etc", "e.g", "i.e", "approx", "no"}


def _sentences(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, is a question) of each sentence."""
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        mark = m.group(0)
        if mark == ".":
            word = text[max(text.rfind(" ", start, m.start()), text.rfind("\n", start, m.start()), start - 1) + 1:m.start()]
            if word.casefold() in _ABBREV or (len(word) == 1 and word.isupper()):
                continue
        out.append((start, m.end(), "?" in mark))
        start = m.end()
    if start < len(text):
        out.append((start, len(text), False))
    return out


def _clause_start(s: str, lo: int, pos: int) -> int:
    """Where the clause holding position `pos` starts: after the last , ; : ( — or " - " before it, or at a
    conjunction that a new subject follows."""
    cut = max(s.rfind(c, lo, pos) for c in ",;:()—–") + 1
    dash = s.rfind(" - ", lo, pos)
    cut = max(cut, dash + 2 if dash >= 0 else 0, lo)
    conj = _CONJ_BEFORE.search(s, cut, pos)
    return conj.start() if conj else cut


_CONJ_BEFORE = re.compile(r"\b(?:and|but|so|because|cause|although|though|while|whereas|plus|then|now|yet)[ \t]+$",
                          re.IGNORECASE)


def _ordinary(word: str) -> bool:
    w = word.casefold().replace("’", "'")
    return w in COMMON or w.split("'")[0] in COMMON or w in _TIME_WORDS


@dataclass
class _Subject:
    names: list[str | None]  # None: the speaker
    kind: str  # "i", "we", "person"
    start: int  # where the subject's words start (for the clause check)
    end: int  # where its verb may start


class _Reader:
    def __init__(self, text: str, known: Mapping[str, str] | None):
        self.text = text
        self.known = known
        self.out: list[FoundRelation] = []
        self.people: list[tuple[str, str | None]] = []  # persons introduced in this message: (name, "he"/"she"/None)

    # ------------------------------------------------------------------ objects

    def known_type(self, name: str) -> str | None:
        return self.known.get(_fold(name)) if self.known else None

    def name_at(self, s: str, pos: int, kind: str) -> tuple[int, int] | None:
        """A name (place, organisation, person) starting at `pos`: capitalised words (a leading "the" dropped),
        or a known name in any case."""
        m = re.match(r"(?i:the)[ \t]+", s[pos:])
        at = pos + m.end() if m else pos
        m = _NAME_RX.match(s, at)
        if m:
            end = m.end()
            name = s[at:end]
            if kind == "person" and name.endswith(("'s", "’s")):
                end -= 2
                name = name[:-2]
            name = name.rstrip(".")
            end = at + len(name)
            if kind != "person" and _MODIFIED.match(s, end):
                return None  # "at the Berlin office", "in the London area"
            first = name.split()[0].casefold()
            if _fold(name) in _TIME_WORDS or (len(name.split()) == 1 and _ordinary(name) and kind != "person"):
                return None
            if first in ("i", "i'm", "i've", "i'd", "i'll"):
                return None
            return at, end
        if self.known:  # a known name written in lower case ("i live in berlin now")
            words = list(re.finditer(r"[\w'’.-]+", s[at:at + 80]))
            for n in range(min(4, len(words)), 0, -1):
                cand = s[at:at + words[n - 1].end()]
                t = self.known_type(cand)
                if t is not None and t not in ("date", "person") if kind != "person" else t == "person":
                    return at, at + words[n - 1].end()
        return None

    def things_at(self, s: str, pos: int, stop: int) -> list[tuple[int, int]]:
        """Coordinated noun or gerund phrases from `pos` ("hiking and climbing", "jazz, sushi and long walks").
        A phrase followed by a verb is a clause's subject ("the effects are so cool"), not an object: it and
        what follows are left out."""
        out = []
        while True:
            m = _THING.match(s, pos, stop)
            if not m:
                break
            a, b = m.span("o")
            phrase = re.sub(r"(?:[ \t]+(?i:of))+$", "", s[a:b])  # "awesome food of this city": "awesome food"
            b = a + len(phrase)
            words = phrase.casefold().split()
            if (not words or not words[0][0].isalpha() or "'" in words[0] or "’" in words[0] or words[0] in _VAGUE
                    or " ".join(words[:2]) in _VAGUE or words[-1] in _VAGUE or phrase.casefold() in _LIGHT
                    or _CLAUSE_AFTER.match(s, b, stop)):
                break
            if len(words) == 1 and words[0].endswith("ing") and _PRONOUN_AFTER.match(s, b, stop):
                break  # "I like holding them"
            nxt = re.match(r"[ \t]+(?:and|or|&)[ \t]+([\w'’-]+(?:[ \t]+[\w'’-]+)?)", s[b:stop])
            if nxt and f"{phrase} and {nxt.group(1)}".casefold() in _BINOMIALS:
                b += nxt.end()
            out.append((a, b))
            pos = b
            more = re.match(r"[ \t]*(?:,[ \t]*(?:and[ \t]+|or[ \t]+)?|[ \t]+(?:and|or|&)[ \t]+)", s[pos:stop])
            if not more:
                break
            after = pos + more.end()
            if _verb_at(s, after) is not None or _ANCHOR_HERE.match(s, after):
                break  # "and hate running", "and I ...": another clause, not another object
            pos = after
        return out

    # ------------------------------------------------------------------ emitting

    def emit(self, subject: str | None, predicate: str, a: int, b: int, ended: bool = False,
             offset: int = 0, value: str | None = None) -> None:
        obj = value if value is not None else self.text[offset + a:offset + b]
        obj = obj.strip(" '’-.,")
        if predicate in ("likes", "dislikes"):
            obj = re.sub(r"^(?i:the|a|an)\s+", "", obj)
        if not obj:
            return
        self.out.append(FoundRelation(predicate, obj, offset + a, offset + b, subject, ended))

    def introduce(self, name: str, word: str | None) -> None:
        w = (word or "").casefold()
        gender = "she" if w in _SHE else "he" if w in _HE else None
        self.people = [p for p in self.people if _fold(p[0]) != _fold(name)] + [(name, gender)]

    def pronoun(self, word: str) -> str | None:
        fits = [n for n, g in self.people if g in (None, word.casefold())]
        return fits[-1] if len(fits) == 1 else None

    # ------------------------------------------------------------------ sentences

    def read(self) -> list[FoundRelation]:
        for lo, hi, question in _sentences(self.text):
            self.sentence(self.text, lo, hi, question)
        return self.out

    def sentence(self, s: str, lo: int, hi: int, question: bool) -> None:
        opener = _OPENERS.match(s, lo, hi)
        body = opener.end() if opener else lo
        while body < hi and s[body] in " \t\n\"'“(*_~":
            body += 1
        question = question or bool(_QUESTION_START.match(s, body, hi) and not re.match(
            r"(?i:have|has|had)\s+(?:a|an|two|three|\d+)\b", s[body:hi]))
        hypothetical = bool(_HYPOTHETICAL_START.match(s, body, hi))
        taken = body
        if not question and not hypothetical:
            taken = self.bare(s, body, lo, hi)
        pos = lo
        while (m := _ANCHORS.search(s, pos, hi)) is not None:
            pos = m.end()
            if m.group("name") and " " in m.group("name") and _ordinary(m.group("name").split()[0]):
                pos = m.start() + len(m.group("name").split()[0])  # "Since I ...": read on from the next word
                continue
            if m.start() < taken and not (m.group("kin") or m.group("pet") or m.group("appos")):
                continue
            if m.group("name") and not _NAME_NEXT.match(s, m.end(), hi):
                fill = _FILL.match(s, m.end(), hi)
                if _verb_at(s, fill.end(), fill) is None and (fill.group("be") is None or not _BE_NEXT.match(
                        s, fill.end(), hi)):
                    continue
            subject = self.anchor(s, m, lo, hi, question or hypothetical)
            if subject is None or question or hypothetical:
                continue
            taken = max(taken, self.predicates(s, subject, lo, hi))

    def bare(self, s: str, body: int, lo: int, hi: int) -> int:
        """A chat line without a subject: "Just moved to Dublin!", "Starting as a data analyst at Spotify".
        Returns where its reading stopped (`body` when it is not one)."""
        if not _BARE_VERB.match(s, body, hi):
            return body
        m = _BARE_START.match(s, body, hi)
        found = _verb_at(s, m.end() if m else body)
        if found is None or found[0] not in _BARE:
            return body
        return self.predicates(s, _Subject([None], "i", body, body), lo, hi)

    def anchor(self, s: str, m: re.Match[str], lo: int, hi: int, blocked: bool) -> _Subject | None:
        """The subject a match names (and the relations an introduction states, even in a question: "have you
        met my sister Ana?" still says she is my sister); None when it is not one."""
        if m.group("kin"):
            return self.kin(s, m, hi)
        if m.group("pet"):
            self.pet(s, m, hi)
            return None
        if m.group("bday"):
            if not blocked and not _BLOCK.search(s, _clause_start(s, lo, m.start()), m.start()):
                self.birthday(s, m.end(), None, hi)
            return None
        if m.group("appos"):
            name, word = m.group("aname"), m.group("akin")
            if _ordinary(name.split()[0]):
                km = _KIN_RX.match(s, m.start("aname") + s[m.start("aname"):m.end()].casefold().rfind("my"
                                   if "my" in s[m.start("aname"):m.end()].casefold() else "our"), hi)
                return self.kin(s, km, hi) if km else None
            w = word.casefold()
            if w in KIN:
                self.emit(None, KIN[w], *m.span("aname"), offset=0)
                self.introduce(name, w)
            else:
                self.emit(None, "has_pet", *m.span("aname"))
                return None
            after = re.match(r"[ \t]*,[ \t]*", s[m.end():hi])
            if s[m.start("aname") + len(name):m.start("aname") + len(name) + 1] == "," and after:
                return _Subject([name], "person", m.start(), m.end() + after.end())
            return None
        if m.group("pair") or m.group("pair2"):
            name = m.group("pname") or m.group("p2name")
            if _ordinary(name.split()[0]):
                return None
            return _Subject([name, None], "i", m.start(), m.end())
        if m.group("i"):
            if (m.group("ic") or "").casefold().replace("’", "'") in ("'d", "'ll"):
                return None
            end = m.end() if (m.group("ic") or "").casefold().replace("’", "'") in ("", "'s") else m.start("ic")
            return _Subject([None], "i", m.start(), end)
        if m.group("we"):
            if (m.group("wec") or "").casefold().replace("’", "'") in ("'d", "'ll"):
                return None
            return _Subject([None], "we", m.start(), m.start("wec") if m.group("wec") else m.end())
        if m.group("pron"):
            if (m.group("pc") or "").casefold().replace("’", "'") in ("'d", "'ll"):
                return None
            name = self.pronoun(m.group("pronw"))
            if name is None:
                return None
            return _Subject([name], "person", m.start(), m.start("pc") if m.group("pc") else m.end())
        name = m.group("name")
        if not name or _ordinary(name.split()[0]):
            return None
        possessive = name.endswith(("'s", "’s"))
        base = name[:-2] if possessive else name
        t = self.known_type(base) or self.known_type(base.split()[0])
        if t is not None and t != "person":
            return None
        if possessive:
            if t == "person" or any(_fold(p) == _fold(base) for p, _ in self.people):
                bday = re.match(r"[ \t]+birthday\b", s[m.end():hi])
                if bday and not _BLOCK.search(s, _clause_start(s, lo, m.start()), m.start()):
                    self.birthday(s, m.end() + bday.end(), base, hi)
            return None
        known = t == "person" or any(_fold(p) == _fold(base) for p, _ in self.people)
        return _Subject([base], "person" if known else "unknown", m.start(), m.end())

    def kin(self, s: str, m: re.Match[str], hi: int) -> _Subject | None:
        word = m.group("kinword").casefold()
        pred = KIN.get(re.sub(r"\s+", " ", word))
        after = m.end()
        named = re.match(r"(?:['’]s[ \t]+name[ \t]+is|[ \t]+is[ \t]+(?:called|named)|[ \t]*,?[ \t]+(?:called|named)|"
                         r"[ \t]*,)?[ \t]+", s[after:hi])
        if not named:
            return None
        at = after + named.end()
        people = []
        while True:
            pm = _PERSON_RX.match(s, at, hi)
            if not pm:
                break
            name = pm.group(0)
            if name.endswith(("'s", "’s")):
                name = name[:-2]
            if not name or (_ordinary(name.split()[0]) and name.split()[0].casefold() not in ("will", "may")):
                break
            people.append((at, at + len(name)))
            at = at + len(name)
            more = re.match(r"[ \t]+(?:and|&)[ \t]+(?=[A-Z])", s[at:hi]) if m.group("plural") else None
            if not more:
                break
            at += more.end()
        if not people:
            return None
        names = []
        for a, b in people:
            name = s[a:b]
            if pred is not None:
                self.emit(None, pred, a, b)
            self.introduce(name, word)
            names.append(name)
        end = people[-1][1]
        if s[end:end + 2] in ("'s", "’s"):
            bday = re.match(r"[ \t]+birthday\b", s[end + 2:hi])
            if bday:
                self.birthday(s, end + 2 + bday.end(), names[-1], hi)
            return None
        rest = re.match(r"[ \t]*,[ \t]*(?:who[ \t]+)?|[ \t]+who[ \t]+", s[end:hi])
        pair = re.match(r"[ \t]+(?:and|&)[ \t]+(?:I|me)\b(?!['’])", s[end:hi])
        if pair:
            return _Subject([*names, None], "i", m.start(), end + pair.end())
        if rest and "who" in rest.group(0):
            return _Subject(names, "person", m.start(), end + rest.end())
        if rest:  # "My dad, Frank, was born in Glasgow"
            return _Subject(names, "person", m.start(), end + rest.end())
        return _Subject(names, "person", m.start(), end)

    def pet(self, s: str, m: re.Match[str], hi: int) -> None:
        named = re.match(rf"(?:['’]s[ \t]+name(?:[ \t]+is|['’]s)|[ \t]+is[ \t]+(?:called|named)|[ \t]*,?[ \t]+"
                         rf"(?:called|named)|[ \t]*,)?[ \t]+(?P<o>{_NAME})", s[m.end():hi])
        if not named:
            return
        a, b = m.end() + named.start("o"), m.end() + named.end("o")
        name = s[a:b]
        if name.endswith(("'s", "’s")):
            b -= 2
        if _ordinary(s[a:b].split()[0]):
            return
        self.emit(None, "has_pet", a, b)

    def birthday(self, s: str, pos: int, subject: str | None, hi: int) -> None:
        m = re.match(r"(?:['’]s|[ \t]+(?:is|was))?[ \t]+(?:(?i:on|the)[ \t]+)?", s[pos:hi])
        if not m:
            return
        at = pos + m.end()
        d = _DATE.match(s, at, hi)
        if d:
            self.emit(subject, "birthday", d.start(), d.end())

    # ------------------------------------------------------------------ predicates

    def predicates(self, s: str, subj: _Subject, lo: int, hi: int) -> int:
        """The verb phrases after a subject, and those coordinated with them; returns where reading stopped."""
        clause = -1  # where the subject's clause starts: found once a verb is
        pos, first = subj.end, True
        while True:
            fill = _FILL.match(s, pos, hi)
            at = fill.end()
            found = _verb_at(s, at, fill)
            if found is None:
                if first and fill.group("be") is not None:
                    found = self.be_phrase(s, at, hi)
                if found is None:
                    return pos
            kind, vend = found
            verb_start = at
            if clause < 0:
                clause = _clause_start(s, lo, subj.start)
            status = self.status(s, clause, subj, verb_start, hi)
            end = self.objects(s, subj, kind, vend, status, fill, hi)
            if end is None:
                return pos
            pos = end
            first = False
            more = _AND_VERB.match(s, pos, hi)
            if not more:
                return pos
            nxt = _FILL.match(s, more.end(), hi)
            if _verb_at(s, nxt.end(), nxt) is None:
                return pos
            pos = more.end()

    def be_phrase(self, s: str, at: int, hi: int) -> tuple[str, int] | None:
        """After "I'm" / "is": "a nurse", "a student at", "into climbing", "a huge fan of"."""
        for kind in ("student", "likes_be"):
            m = _VERB_BY_KIND[kind].match(s, at, hi)
            if m:
                return kind, m.end()
        if _BE_TITLE.match(s, at, hi):
            return "title_be", at
        return None

    def status(self, s: str, clause: int, subj: _Subject, verb_start: int, hi: int) -> str:
        """"ok", "ended" (no longer / not ... anymore) or "skip" for the words from the clause start to the verb
        (the subject's own words aside: "my husband Will", "my aunt May")."""
        before = s[clause:subj.start] + " " + s[max(subj.end, clause):verb_start]
        if _BLOCK.search(before):
            if _NEG_ONLY.search(before) and not _BLOCK.search(_NEG_ONLY.sub(" ", before)):
                end = _clause_end(s, verb_start, hi)
                if _ANYMORE.search(s, verb_start, end) or re.search(r"\bno\s+longer\b", before, re.IGNORECASE):
                    return "ended"
            return "skip"
        return "ok"

    def objects(self, s: str, subj: _Subject, kind: str, at: int, status: str, fill: re.Match[str],
                hi: int) -> int | None:
        """Read the object(s) of one verb phrase; emit its relations unless `status` is "skip". Returns where
        the phrase ends, None when it has no object the tier takes."""
        perfect = fill.group("have") is not None
        subjects = subj.names
        if subj.kind == "we" and kind not in _WE_KINDS:
            status = "skip"
        if subj.kind == "unknown" and kind not in _UNKNOWN_NAME_KINDS:
            status = "skip"
        ended = status == "ended"
        stop = _clause_end(s, at, hi)
        if kind in ("lives", "lives_past", "lives_used", "born"):
            span = self.name_at(s, at, "place")
            if span is None:
                inner = _PLACE_INNER.match(s, at, stop)
                span = self.name_at(s, inner.end(), "place") if inner and kind != "born" else None
            if span is None:
                return None
            span = self.corrected(s, span, "place", hi)
            if kind == "lives_past" and not perfect or kind == "lives_used":
                ended = True
            pred = "born_in" if kind == "born" else "lives_in"
            self.emit_all(subjects, pred, span, ended, status)
            return span[1]
        if kind == "moved_from":
            first = self.name_at(s, at, "place")
            if first is None:
                return None
            to = re.match(r"[ \t]+(?:to|into)[ \t]+", s[first[1]:hi])
            second = self.name_at(s, first[1] + to.end(), "place") if to else None
            self.emit_all(subjects, "lives_in", first, True, status)
            if second is not None:
                second = self.corrected(s, second, "place", hi)
                self.emit_all(subjects, "lives_in", second, ended, status)
                return second[1]
            return first[1]
        if kind in ("works", "works_past", "works_used", "joined", "quit", "laid_off", "left", "studies", "studies_past",
                    "student"):
            span = self.name_at(s, at, "organisation")
            if span is None:
                return None
            name = s[span[0]:span[1]]
            if kind == "joined" and (name.casefold() in _PLATFORMS or re.match(
                    r"[ \t]+(?i:group|club|team|class|community|forum|gym|league|server|channel|program|band|choir|"
                    r"crew|chat)\b", s[span[1]:hi])):
                return None
            if kind == "left" and not self.left_job(s, name, span[1], hi):
                return None
            span = self.corrected(s, span, "organisation", hi)
            if kind in ("quit", "laid_off", "left", "works_used") or kind in ("works_past", "studies_past") and not perfect:
                ended = True
            if kind in ("works", "joined") and self.progressive(s, at, fill) and _FUTURE.search(s, span[1], stop):
                status = "skip"
            pred = "studies_at" if kind in ("studies", "studies_past", "student") else "works_at"
            self.emit_all(subjects, pred, span, ended, status)
            return span[1]
        if kind in ("title", "title_be"):
            m = _TITLE_ANY.match(s, at, hi) if kind == "title" else _BE_TITLE.match(s, at, hi)
            if not m or any(w in _NOT_JOB for w in m.group("o").casefold().split()[:-1]):
                return None
            if kind == "title_be" and fill.group("be") and fill.group("be").casefold() in ("was", "were") and not perfect:
                ended = True
            if kind == "title" and self.progressive(s, at, fill) and _FUTURE.search(s, m.end(), stop):
                status = "skip"
            self.emit_all(subjects, "job_title", m.span("o"), ended, status)
            end = m.end()
            then = _THEN_AT.match(s, end, hi)
            if then:
                span = self.name_at(s, then.end(), "organisation")
                if span is not None:
                    self.emit_all(subjects, "works_at", span, ended, status)
                    return span[1]
            based = _THEN_BASED.match(s, end, hi)
            if based:
                span = self.name_at(s, based.end(), "place")
                if span is not None:
                    self.emit_all(subjects, "lives_in", span, ended, status)
                    return span[1]
            return end
        if kind in ("married", "divorced"):
            span = self.name_at(s, at, "person")
            if span is None or s[span[0]:span[1]].split()[0].casefold() in ("him", "her", "them"):
                return None
            self.emit_all(subjects, "partner", span, ended or kind == "divorced", status)
            for n in subjects:
                if n is None:
                    self.introduce(s[span[0]:span[1]], None)
            return span[1]
        if kind == "has_pet":
            names = []
            m = _PET_NAMES.match(s, at, hi)
            if m:
                names.append(m.span("o"))
                pos = m.end()
                while (more := _AND_NAME.match(s, pos, hi)) is not None:
                    names.append(more.span("o"))
                    pos = more.end()
            else:
                later = _NAMED_LATER.match(s, at, hi)
                if later:
                    names.append(later.span("o"))
            names = [(a, b) for a, b in names if not _ordinary(s[a:b].split()[0])]
            if not names:
                return None
            for span in names:
                self.emit_all(subjects, "has_pet", span, ended, status)
            return names[-1][1]
        if kind in ("likes", "likes_be", "likes_used", "dislikes"):
            things = self.things_at(s, at, stop)
            if not things:
                return None
            pred = "dislikes" if kind == "dislikes" else "likes"
            for span in things:
                self.emit_all(subjects, pred, span, ended or kind == "likes_used", status)
            return things[-1][1]
        if kind == "born_on":
            d = _DATE.match(s, at, hi)
            if not d:
                return None
            self.emit_all(subjects, "birthday", d.span(), False, status)
            return d.end()
        return None

    def progressive(self, s: str, at: int, fill: re.Match[str]) -> bool:
        words = s[max(0, at - 40):at].split()
        return bool(words) and any(w.casefold().endswith("ing") for w in words[-3:])

    def left_job(self, s: str, name: str, end: int, hi: int) -> bool:
        """"left X" is a job only for a known organisation or when a job follows ("left X and joined Y")."""
        if self.known_type(name) == "organisation":
            return True
        return bool(re.match(r"[ \t]+(?:(?:and|to)[ \t]+(?:\w+[ \t]+)?(?:join|joined|start|started|work|working)\b|"
                             r"for[ \t]+[A-Z])", s[end:hi]))

    def corrected(self, s: str, span: tuple[int, int], kind: str, hi: int) -> tuple[int, int]:
        """"I moved to Lisbon, no wait, Porto": the name after the correction."""
        m = _CORRECTION.match(s, span[1], hi)
        if m and m.end() > span[1]:
            other = self.name_at(s, m.end(), kind)
            if other is not None:
                return self.corrected(s, other, kind, hi)
        return span

    def emit_all(self, subjects: list[str | None], pred: str, span: tuple[int, int], ended: bool, status: str) -> None:
        if status == "skip":
            return
        for subject in subjects:
            self.emit(subject, pred, *span, ended=ended or status == "ended")


_THING = re.compile(
    r"(?:(?i:the|a|an)[ \t]+)?(?P<o>[\w'’-]+(?:[ \t]+(?!(?i:and|or|but|because|cause|so|when|if|while|though|although|"
    r"as|than|that|which|who|whose|where|since|until|with|at|in|on|for|from|to|about|during|after|before|into|by|"
    r"like|around|near|over|under|through|too|more|most|less|now|lately|anymore|every|each|today|tonight|yesterday|"
    r"again|either|right|haha|lol|very|really|sooo*|even|all|just|cuz|bc|is|are|was|were|it|you|me|them|this|these|"
    r"here|there)\b)[\w'’-]+){0,4})"
    r"(?=[ \t]*(?:[,.;:!?…)(\"”]|[ \t]-[ \t]|—|–|$|\n)|[ \t]+(?i:and|or|&|but|because|cause|so|when|if|while|though|"
    r"although|as|than|that|which|who|whose|where|since|until|with|at|in|on|for|from|to|about|during|after|before|"
    r"into|by|like|around|near|over|under|through|too|more|most|less|now|lately|anymore|every|each|today|tonight|"
    r"yesterday|again|either|right|haha|lol|very|really|sooo*|even|all|just|cuz|bc|is|are|was|were|it|you|me|them|"
    r"this|these|here|there|a\s+lot|lots|so\s+much|these\s+days)\b)")

_VERB_BY_KIND = {}
for _kind, _rx in _VERBS:
    _VERB_BY_KIND.setdefault(_kind, _rx)
_CLAUSE_AFTER = re.compile(r"[ \t]+(?i:is|are|was|were|has|have|had|makes?|brings?|gets?|keeps?|helps?|lets?|feels?|"
                           r"looks?|seems?|turned|tackles?|can|will|would)\b")
_PRONOUN_AFTER = re.compile(r"[ \t]+(?i:them|it|him|her|you|me|us|this|that)\b")
_ANCHOR_HERE = re.compile(r"(?:[Ii]|[Ww]e|[Ss]he|[Hh]e|[Mm]y|[Oo]ur)\b")


# every verb phrase in one pattern, first listed first (one match in C instead of forty in Python); without
# "into" / "a student at", which only follow a form of "to be"
_VERB_ALL = re.compile("|".join(f"(?P<v{i}>{rx.pattern})" for i, (_k, rx) in enumerate(_VERBS)))
_VERB_NOT_BE = re.compile("|".join(f"(?P<v{i}>{rx.pattern})" for i, (k, rx) in enumerate(_VERBS)
                                   if k not in ("likes_be", "student")))
_VERB_START = re.compile(r"[^\W\d_]|['’]")


def _verb_at(s: str, at: int, fill: re.Match[str] | None = None) -> tuple[str, int] | None:
    """The verb phrase starting at `at`: (kind, where its object starts)."""
    if not _VERB_START.match(s, at):
        return None
    m = (_VERB_ALL if fill is not None and fill.group("be") is not None else _VERB_NOT_BE).match(s, at)
    return (_VERBS[int(m.lastgroup[1:])][0], m.end()) if m else None


def _clause_end(s: str, pos: int, hi: int) -> int:
    m = _CLAUSE_END.search(s, pos, hi)
    return m.start() if m else hi


_CLAUSE_END = re.compile(r"[.;!?…]|,[ \t]+(?:but|so|because)\b|[ \t]-[ \t]|—|–|\n")


def find_relations(text: str, known: Mapping[str, str] | None = None) -> list[FoundRelation]:
    """The relations stated in `text`, in order of appearance. `known`: the user's known names (folded name ->
    entity type, the graph's gazetteer), for people named without an introduction and names in lower case."""
    if not _ANY.search(text):
        return []  # every reading needs a subject word, a name before a verb or a subjectless opener
    found = _Reader(text, known).read()
    seen: set[tuple] = set()
    unique = []
    for r in sorted(found, key=lambda r: r.start):
        key = (_fold(r.subject or ""), r.predicate, _fold(r.object), r.ended)
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique
