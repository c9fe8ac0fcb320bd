"""German: the cues that state relations, kin words, pets, jobs, what blocks a reading, and the capitalised
nouns that are never names (every German noun is capitalised: capitalisation is no evidence of a name) (pure
data)."""

from __future__ import annotations

import re

from .latin import QUESTION, SENTENCE_END, gendered, name, thing
from .types import CueGrammar, Lexicon, Validity, alternation, cue_maker

KIN = {
    "schwester": "sister",
    "bruder": "brother",
    "mutter": "mother",
    "mama": "mother",
    "mutti": "mother",
    "vater": "father",
    "papa": "father",
    "vati": "father",
    "sohn": "son",
    "tochter": "daughter",
    "frau": "partner",
    "ehefrau": "partner",
    "mann": "partner",
    "ehemann": "partner",
    "partner": "partner",
    "partnerin": "partner",
    "verlobter": "partner",
    "verlobte": "partner",
    "fester freund": "partner",
    "feste freundin": "partner",
    "freund": "friend",
    "freundin": "friend",
    "kumpel": "friend",
    "cousin": "relative",
    "cousine": "relative",
    "tante": "relative",
    "onkel": "relative",
    "oma": "relative",
    "opa": "relative",
    "großmutter": "relative",
    "großvater": "relative",
    "nichte": "relative",
    "neffe": "relative",
    "enkel": "relative",
    "enkelin": "relative",
    "kollege": "colleague",
    "kollegin": "colleague",
    "mitbewohner": "",
    "mitbewohnerin": "",
    "nachbar": "",
    "nachbarin": "",
    "chef": "",
    "chefin": "",
}
SHE = {"schwester", "mutter", "mama", "mutti", "tochter", "frau", "ehefrau", "partnerin", "verlobte", "feste freundin",
       "freundin", "cousine", "tante", "oma", "großmutter", "nichte", "enkelin", "kollegin", "mitbewohnerin",
       "nachbarin", "chefin"}  # fmt: skip
HE = {"bruder", "vater", "papa", "vati", "sohn", "mann", "ehemann", "verlobter", "fester freund", "freund", "kumpel",
      "cousin", "onkel", "opa", "großvater", "neffe", "enkel", "kollege", "mitbewohner", "nachbar", "chef"}  # fmt: skip
PETS = ["Hund", "Hündin", "Katze", "Kater", "Welpe", "Kätzchen", "Kaninchen", "Hase", "Hamster", "Meerschweinchen",
        "Wellensittich", "Papagei", "Pferd", "Pony", "Schildkröte", "Fisch", "Goldfisch", "Schlange", "Frettchen"]  # fmt: skip
JOBS = [
    *gendered("Lehrer", "Ingenieur", "Entwickler", "Softwareentwickler", "Programmierer", "Krankenpfleger",
              "Altenpfleger", "Pfleger", "Bäcker", "Verkäufer", "Polizist", "Journalist", "Architekt", "Designer",
              "Grafikdesigner", "Friseur", "Mechaniker", "Elektriker", "Erzieher", "Apotheker", "Professor",
              "Buchhalter", "Kellner", "Busfahrer", "Fahrer", "Pilot", "Physiotherapeut", "Therapeut", "Berater",
              "Manager", "Projektmanager", "Landwirt", "Schreiner", "Tischler", "Maler", "Musiker", "Künstler",
              "Fotograf", "Übersetzer", "Sekretär", "Wissenschaftler", "Forscher", "Informatiker", "Schauspieler",
              "Sozialarbeiter", "Steuerberater", "Unternehmer", "Dozent", "Redakteur", "Elektroniker", "Koch",
              "Tierarzt", "Zahnarzt", "Arzt", "Anwalt", "Rechtsanwalt", "Psychologe", "Datenanalyst", "Beamte",
              suffix="in"),
    "Krankenschwester", "Ärztin", "Zahnärztin", "Tierärztin", "Anwältin", "Rechtsanwältin", "Köchin",
    "Psychologin", "Beamtin", "Hebamme", "Bankkaufmann", "Bankkauffrau", "Kaufmann", "Kauffrau", "Polizistin",
]  # fmt: skip
# capitalised words that are never names: nouns of everyday chat, food, days, months, and the words of the
# relation cues themselves
NOT_NAMES = {w.casefold() for w in (
    "Ich", "Wir", "Du", "Sie", "Er", "Es", "Ihr", "Mein", "Meine", "Meinen", "Meinem", "Meiner", "Unser", "Unsere",
    "Der", "Die", "Das", "Den", "Dem", "Ein", "Eine", "Einen", "Und", "Aber", "Oder", "Heute", "Morgen", "Gestern",
    "Hund", "Hunde", "Katze", "Katzen", "Wochenende", "Woche", "Monat", "Jahr", "Tag", "Abend", "Nacht", "Zeit",
    "Arbeit", "Job", "Büro", "Schule", "Uni", "Universität", "Haus", "Hause", "Wohnung", "Stadt", "Land", "Urlaub",
    "Geburtstag", "Essen", "Lieblingsessen", "Käsespätzle", "Kaffee", "Bier", "Wein", "Pizza", "Brot", "Kuchen",
    "Vegetarier", "Vegetarierin", "Veganer", "Veganerin", "Leute", "Familie", "Kinder", "Kind", "Eltern", "Freunde",
    "Sport", "Musik", "Film", "Buch", "Spiel", "Auto", "Bahn", "Zug", "Wetter", "Regen", "Sonne", "Schnee", "Montag",
    "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag", "Januar", "Februar", "März", "April",
    "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember", "Frühling", "Sommer", "Herbst",
    "Winter", "Weihnachten", "Ostern", "Nähe", "Mitte", "Zentrum", "Innenstadt", "Ausland", "Firma", "Stelle",
    "Bank", "Krankenhaus", "Praxis", "Laden", "Supermarkt", "Hauptstadt", "Dorf", "Ruhe", "Spaß", "Angst", "Lust",
    "Hallo", "Danke", "Bitte", "Ja", "Nein", "Also", "Jetzt", "Endlich", "Übrigens", "Leider", "Zum", "Im", "Am",
    "Seit", "Letzten", "Letztes", "Letzte", "Nächsten", "Vielleicht", "Wenn", "Als", "Bei", "Nach", "Mit",
)} | set(KIN) | {w.casefold() for w in PETS}  # fmt: skip
BLOCK_WORDS = (
    "nicht|nie|niemals|kein|keine|keinen|keinem|keiner|wenn|falls|ob|würde|würden|wäre|wären|hätte|hätten|möchte|"
    "möchten|will|willst|wollen|wollte|wollten|werde|werden|wird|vielleicht|eventuell|wahrscheinlich|irgendwann|bald|"
    "nächste|nächsten|nächstes|morgen|plane|planen|hoffe|hoffen|wünsche|träume|sagt|sagte|meint|meinte|glaube|"
    "glaubt|denke|dachte|fragt|fragte|soll|sollte|könnte|könnten|kann|muss|müsste|angeblich"
)
ADV = (
    r"(?:(?:jetzt|schon|noch|mittlerweile|inzwischen|gerade|wieder|auch|ja|aktuell|derzeit|momentan|hier|endlich|"
    r"nun|seit\s+kurzem|seit\s+(?:über\s+|fast\s+)?(?!nicht)\w+(?:\s+(?:Jahren|Monaten|Wochen|Tagen))?)\s+){0,3}"
)
GAP = rf"(?:(?!(?:{BLOCK_WORDS})\b)[\w.]+\s+){{0,4}}?"
ART = r"(?:(?:der|die|das|dem|den)\s+)?"
PARTS = {
    "NAME": name(r"am|an\s+der|von|vom|zu|de|del|la|le|of"),
    "THING": thing(r"und|oder|aber|sehr|total|wirklich|so|auch|sehr|gern|gerne|am|im|in|mit|zum|zur|nicht|jetzt"),
    "TITLE": alternation(JOBS),
    "PET": alternation(PETS),
    "ADV": ADV,
    "GAP": GAP,
    "ART": ART,
    "ICH": r"(?:ich\s+)?",
}


_cue = cue_maker(PARTS)


CUES = (
    # lives_in
    _cue("lives_in", r"\b(?:wohne|lebe)\s+{ICH}{ADV}in\s+(?P<o>{NAME})"),
    _cue("lives_in", r"\b[Ww]ir\s+{ADV}(?:wohnen|leben)\s+{ADV}in\s+(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:wohnen|leben)\s+wir\s+{ADV}in\s+(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:[Ii]ch\s+bin|bin\s+ich|[Ww]ir\s+sind|sind\s+wir)\s+{GAP}nach\s+(?P<o>{NAME})\s+(?:um|hin)?gezogen"),
    _cue("lives_in", r"\b(?:[Ii]ch\s+bin|bin\s+ich|[Ww]ir\s+sind|sind\s+wir)\s+{GAP}(?:um|hin)?gezogen,?\s+nach\s+(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:wohnt|lebt)\s+{ADV}in\s+(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\bist\s+{GAP}nach\s+(?P<o>{NAME})\s+(?:um)?gezogen", subject="person"),
    _cue("lives_in", r"\b(?:wohne|lebe)\s+{ICH}nicht\s+mehr\s+in\s+(?P<o>{NAME})", ended=True),
    _cue("lives_in", r"\b(?:wohnen|leben)\s+(?:wir\s+)?nicht\s+mehr\s+in\s+(?P<o>{NAME})", ended=True),
    _cue("lives_in", r"\b(?:habe|haben)\s+(?:ich\s+|wir\s+)?früher\s+in\s+(?P<o>{NAME})\s+(?:gewohnt|gelebt)", ended=True),
    _cue("lives_in", r"\b(?:wohnte|lebte)\s+{ICH}früher\s+in\s+(?P<o>{NAME})", ended=True),
    _cue("lives_in", r"\b(?:bin|sind)\s+(?:ich\s+|wir\s+)?{GAP}aus\s+(?P<o>{NAME})\s+weggezogen", ended=True),
    # works_at
    _cue("works_at", r"\barbeite\s+{ICH}{ADV}(?:bei|für)\s+{ART}(?P<o>{NAME})"),
    _cue("works_at", r"\barbeitet\s+{ADV}(?:bei|für)\s+{ART}(?P<o>{NAME})", subject="person"),
    _cue("works_at", r"\barbeite\s+{ICH}nicht\s+mehr\s+(?:bei|für)\s+{ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\bhabe\s+{ICH}{GAP}(?:(?:meinen|den)\s+Job\s+|(?:meine|die)\s+Stelle\s+)?bei\s+{ART}(?P<o>{NAME})\s+gekündigt", ended=True),
    _cue("works_at", r"\bhabe\s+{ICH}{GAP}bei\s+{ART}(?P<o>{NAME})\s+aufgehört", ended=True),
    _cue("works_at", r"\bbin\s+{ICH}{GAP}bei\s+{ART}(?P<o>{NAME})\s+(?:ausgestiegen|rausgeflogen|entlassen\s+worden)", ended=True),
    _cue("works_at", r"\bhabe\s+{ICH}früher\s+(?:bei|für)\s+{ART}(?P<o>{NAME})\s+gearbeitet", ended=True),
    _cue("works_at", r"\bhabe\s+{ICH}{GAP}bei\s+{ART}(?P<o>{NAME})\s+angefangen"),
    _cue("works_at", r"\bbin\s+{ICH}{GAP}zu\s+{ART}(?P<o>{NAME})\s+gewechselt"),
    # job_title
    _cue("job_title", r"\b(?:[Ii]ch\s+bin|bin\s+ich)\s+{ADV}(?:(?:ein|eine)\s+)?(?P<o>{TITLE})\b(?!\s*-)"),
    _cue("job_title", r"\barbeite\s+{ICH}{ADV}als\s+(?P<o>[\wäöüÄÖÜß-]+)"),
    _cue("job_title", r"\bist\s+{ADV}(?:(?:ein|eine)\s+)?(?P<o>{TITLE})\b", subject="person"),
    _cue("job_title", r"\barbeitet\s+{ADV}als\s+(?P<o>[\wäöüÄÖÜß-]+)", subject="person"),
    # studies_at
    _cue("studies_at", r"\bstudiere\s+{ICH}{ADV}(?:[\wäöüÄÖÜß-]+\s+)?(?:an\s+der|an\s+dem|am|an)\s+(?P<o>{NAME})"),
    _cue("studies_at", r"\bstudiert\s+{ADV}(?:[\wäöüÄÖÜß-]+\s+)?(?:an\s+der|an\s+dem|am|an)\s+(?P<o>{NAME})", subject="person"),
    # partner
    _cue("partner", r"\b(?:[Ii]ch\s+bin|bin\s+ich)\s+{ADV}mit\s+(?P<o>{NAME})\s+(?:verheiratet|zusammen|verlobt)"),
    _cue("partner", r"\bist\s+{ADV}mit\s+(?P<o>{NAME})\s+(?:verheiratet|zusammen|verlobt)", subject="person"),
    _cue("partner", r"\b(?:[Ii]ch\s+habe|habe\s+ich)\s+{GAP}(?P<o>{NAME})\s+geheiratet"),
    # has_pet
    _cue("has_pet", r"\b(?:habe|haben|hab)\s+(?:ich\s+|wir\s+)?{ADV}(?:einen|eine|ein)\s+(?:[\wäöü]+\s+)?{PET}\s+(?:namens|mit\s+Namen)\s+(?P<o>{NAME})"),
    _cue("has_pet", r"\b(?:[Mm]ein|[Mm]eine|[Uu]nser|[Uu]nsere)\s+(?:[\wäöü]+\s+)?{PET}\s+heißt\s+(?P<o>{NAME})"),
    _cue("has_pet", r"\b(?:[Mm]ein|[Mm]eine|[Uu]nser|[Uu]nsere)\s+{PET}\s+(?P<o>{NAME})\s+(?:ist|hat|war|liegt|schläft|frisst|spielt)\b"),
    # likes / dislikes
    _cue("likes", r"\b[Ii]ch\s+(?:liebe|mag)\s+{ADV}(?P<o>{THING})", thing=True),
    _cue("likes", r"\b[Ii]ch\s+(?:bin|war\s+schon\s+immer)\s+{ADV}(?:ein\s+)?(?:großer\s+|riesiger\s+)?Fan\s+von\s+(?P<o>{THING})", thing=True),
    _cue("dislikes", r"\b[Ii]ch\s+hasse\s+{ADV}(?P<o>{THING})", thing=True),
    _cue("dislikes", r"\b[Ii]ch\s+kann\s+(?P<o>[\wäöüÄÖÜß-]+(?:\s+[\wäöüÄÖÜß-]+)?)\s+(?:nicht|echt\s+nicht|gar\s+nicht)\s+(?:ausstehen|leiden)", thing=True),
)  # fmt: skip

PERSON = r"[A-ZÄÖÜ][\wäöüß'’-]+(?:\s+[A-ZÄÖÜ][\wäöüß'’-]+)?"
POSS = r"\b(?:[Mm]ein|[Mm]eine|[Mm]einen|[Mm]einem|[Mm]einer|[Uu]nser|[Uu]nsere|[Uu]nseren|[Uu]nserem)\s+"
ADJ = (
    r"(?:(?:beste|bester|besten|kleine|kleiner|kleinen|große|großer|großen|ältere|älterer|älteren|jüngere|"
    r"jüngerer|jüngeren|liebe|lieber|alte|alter|neue|neuer|feste|fester|festen)\s+)?"
)
KIN_WORDS = alternation([w.title() if " " not in w else w.split()[0] + " " + w.split()[1].title() for w in KIN])
INTRODUCTIONS = (
    re.compile(rf"{POSS}{ADJ}(?P<k>{KIN_WORDS})(?:\s*,\s*|\s+heißt\s+|\s+namens\s+|\s+)(?P<n>{PERSON})"),
    re.compile(rf"(?<![\wäöüß])(?P<n>{PERSON})\s*,\s*(?:mein|meine|unser|unsere)\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
    re.compile(rf"(?<![\wäöüß])(?P<n>{PERSON})\s+ist\s+(?:mein|meine|unser|unsere)\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
)

GRAMMAR = CueGrammar(
    cues=CUES,
    introductions=INTRODUCTIONS,
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    pronouns={"sie": "she", "er": "he"},
    sentence_end=SENTENCE_END,
    clause_cut=re.compile(r"[,;:]|\s[-–—]\s|\b(?:und|aber|sondern|oder|doch|denn|weil|obwohl|als|nachdem)\b"),
    question=QUESTION,
    block=re.compile(rf"\b(?:{BLOCK_WORDS})\b", re.IGNORECASE),
    self_before=re.compile(r"\s*"),
    link=re.compile(
        r"\s*(?:,\s*)?(?:(?:und|auch|jetzt|schon|noch|mittlerweile|inzwischen|aber|seit\s+\w+(?:\s+\w+)?)\s+)*"
    ),
    name=re.compile(r"\b(?:[Ss]ie|[Ee]r|[A-ZÄÖÜ][\wäöüß'’-]*)\b"),
    not_names=frozenset(NOT_NAMES),
    article=re.compile(r"(?:der|die|das|den|dem|ein|eine|einen)\s+", re.IGNORECASE),
    honorifics=re.compile(r"^(?:Herr|Frau|Dr\.)\s+"),
)


VALIDITY = Validity(
    present=re.compile(
        r"\b(?:jetzt|gerade|derzeit|momentan|aktuell|zurzeit|heute|inzwischen|mittlerweile|noch|neue[nrs]?)\b",
        re.IGNORECASE,
    ),
    past=re.compile(r"\b(?:früher|vorher|davor|ehemals|ehemalige[nrs]?|damals|zuvor|alte[nrs]?)\b", re.IGNORECASE),
    predicates={
        "lives_in": re.compile(r"wohn|leb|zieh|gezogen|stadt|zuhause", re.IGNORECASE),
        "works_at": re.compile(r"arbeit|job|firma|arbeitgeber|gekündigt|stelle", re.IGNORECASE),
        "job_title": re.compile(r"beruf|arbeitet\s+als|arbeite\s+als", re.IGNORECASE),
        "studies_at": re.compile(r"studier|uni|hochschule", re.IGNORECASE),
        "partner": re.compile(r"partner|\bfrau\b|\bmann\b|verheiratet|freundin|freund\b", re.IGNORECASE),
    },
    sentences={
        "lives_in": "Wohnt in {o}",
        "works_at": "Arbeitet bei {o}",
        "job_title": "Arbeitet als {o}",
        "studies_at": "Studiert an {o}",
        "partner": "Partner: {o}",
        "sister": "Schwester: {o}",
        "brother": "Bruder: {o}",
        "mother": "Mutter: {o}",
        "father": "Vater: {o}",
        "son": "Sohn: {o}",
        "daughter": "Tochter: {o}",
        "relative": "Verwandt mit {o}",
        "friend": "Befreundet mit {o}",
        "colleague": "Kollegin oder Kollege: {o}",
        "has_pet": "Haustier: {o}",
        "likes": "Mag {o}",
        "dislikes": "Mag {o} nicht",
    },
    others={
        "lives_in": "{s} wohnt in {o}",
        "works_at": "{s} arbeitet bei {o}",
        "job_title": "{s} arbeitet als {o}",
        "studies_at": "{s} studiert an {o}",
    },
)

LEXICON = Lexicon(
    code="de",
    cues=GRAMMAR,
    capitalised_nouns=True,
    first_person=re.compile(r"\b(?:[Ii]ch|[Mm]ein\w*|[Mm]ich|[Mm]ir|[Ww]ir|[Uu]ns\w*)\b"),
    validity=VALIDITY,
)
