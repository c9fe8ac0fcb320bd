"""Italian: the cues that state relations (first-person verb forms need no subject: "Abito a Torino"), kin words,
pets, jobs, what blocks a reading (pure data)."""

from __future__ import annotations

import re

from .latin import QUESTION, SENTENCE_END, name, thing
from .types import CueGrammar, Lexicon, Validity, alternation, cue_maker

KIN = {
    "sorella": "sister", "fratello": "brother", "madre": "mother", "mamma": "mother", "padre": "father",
    "papà": "father", "babbo": "father", "figlio": "son", "figlia": "daughter", "marito": "partner",
    "moglie": "partner", "ragazzo": "partner", "ragazza": "partner", "fidanzato": "partner",
    "fidanzata": "partner", "compagno": "partner", "compagna": "partner", "partner": "partner",
    "amico": "friend", "amica": "friend", "migliore amico": "friend", "migliore amica": "friend",
    "collega": "colleague", "cugino": "relative", "cugina": "relative", "zio": "relative", "zia": "relative",
    "nonno": "relative", "nonna": "relative", "nipote": "relative", "coinquilino": "", "coinquilina": "",
    "vicino": "", "vicina": "", "capo": "",
}  # fmt: skip
SHE = {k for k in KIN if k.split()[-1].endswith("a") and k not in ("collega",)} | {"madre", "moglie"}
HE = set(KIN) - SHE - {"collega", "nipote", "partner", "capo"}
PETS = ["cane", "cagnolino", "cagnolina", "cagna", "gatto", "gatta", "gattino", "gattina", "coniglio", "criceto",
        "pappagallo", "tartaruga", "cavallo", "pesce", "cucciolo", "cucciola"]  # fmt: skip
JOBS = ["insegnante", "professore", "professoressa", "maestro", "maestra", "infermiere", "infermiera", "medico",
        "ingegnere", "avvocato", "avvocatessa", "programmatore", "programmatrice", "sviluppatore", "sviluppatrice",
        "designer", "cameriere", "cameriera", "cuoco", "cuoca", "panettiere", "panettiera", "architetto",
        "giornalista", "dentista", "farmacista", "psicologo", "psicologa", "veterinario", "veterinaria",
        "commercialista", "elettricista", "idraulico", "meccanico", "poliziotto", "poliziotta", "pompiere",
        "pilota", "autista", "traduttore", "traduttrice", "ricercatore", "ricercatrice", "fotografo", "fotografa",
        "musicista", "attore", "attrice", "segretario", "segretaria", "commesso", "commessa", "parrucchiere",
        "parrucchiera", "fisioterapeuta", "consulente", "impiegato", "impiegata", "operaio", "operaia",
        "ragioniere", "imprenditore", "imprenditrice", "barista", "chef", "chirurgo", "analista", "economista",
        "bibliotecario", "bibliotecaria", "agricoltore", "postino", "postina", "educatore", "educatrice"]  # fmt: skip
NOT_NAMES = {w.casefold() for w in (
    "Io", "Il", "Lo", "La", "I", "Gli", "Le", "Un", "Una", "Finalmente", "Oggi", "Ieri", "Domani", "Adesso", "Ora",
    "Già", "Che", "E", "Ma", "Sono", "Ho", "Abito", "Vivo", "Lavoro", "Studio", "Ciao", "Grazie", "Sì", "No",
    "Casa", "Ufficio", "Università", "Scuola", "Azienda", "Centro", "Città", "Paese", "Mare", "Lunedì", "Martedì",
    "Mercoledì", "Giovedì", "Venerdì", "Sabato", "Domenica", "Natale", "Pasqua", "Mio", "Miei", "Mie", "Nostro",
    "Nostra",
)} | set(KIN) | set(PETS)  # fmt: skip
BLOCK_WORDS = (
    "non|mai|né|se|vorrei|vorremmo|voglio|vuole|volevo|spero|speriamo|sogno|forse|magari|probabilmente|andrò|"
    "penso|pensavo|credo|dice|dicono|detto|sarebbe|potrei|dovrei|un\\s+giorno|prossimo|prossima|domani|"
    "intenzione|progetto\\s+di"
)
ADV = r"(?:(?:ora|adesso|già|ancora|attualmente|anche|qui|da\s+(?:\w+\s+)?\w+)\s+){0,2}"
COUNTRIES = r"(?!(?:Italia|Germania|Francia|Spagna|Svizzera|Inghilterra|America|Europa|Cina|Giappone|Austria)\b)"
INSTITUTION = r"(?=Università|Politecnico|Istituto|Accademia|Scuola|Bocconi|Sapienza|Normale)"
PARTS = {
    "NAME": name(r"di|del|della|dei|delle|de|da|e"),
    "THING": thing(r"e|o|ma|perché|molto|tanto|quando|con|in|di|a|che|anche|ora"),
    "TITLE": alternation(JOBS),
    "PET": alternation(PETS),
    "ADV": ADV,
    "AT": r"(?:a|ad|in)\s+",
    "ORG": rf"(?:alla\s+|al\s+|allo\s+|all['’]|per\s+(?:la\s+|il\s+|l['’])?|presso\s+(?:la\s+|il\s+|l['’])?|da\s+|in\s+{COUNTRIES})",
    "FROM": r"(?:dalla\s+|dal\s+|dallo\s+|dall['’]|da\s+)",
    "SCHOOL": rf"(?:alla\s+|al\s+|allo\s+|all['’]|presso\s+(?:la\s+|il\s+|l['’])?|a\s+{INSTITUTION}|in\s+{INSTITUTION})",
    "VERB": r"(?<!(?i:mio|suo|tuo|del|nel)\s)(?<!(?i:il|un)\s)",  # "il mio lavoro alla X": a noun
}


_cue = cue_maker(PARTS)


CUES = (
    _cue("lives_in", r"\b(?:[Aa]bito|[Vv]ivo|[Aa]bitiamo|[Vv]iviamo|[Rr]isiedo)\s+{ADV}{AT}(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:[Mm]i\s+sono\s+trasferit[oa]|[Cc]i\s+siamo\s+trasferit[ie]|[Ss]ono\s+andat[oa]\s+a\s+vivere|[Ss]iamo\s+andati\s+a\s+vivere)\s+{ADV}{AT}(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:abita|vive|risiede)\s+{ADV}{AT}(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\bsi\s+è\s+trasferit[oa]\s+{AT}(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\b[Nn]on\s+(?:abito|vivo|abitiamo|viviamo)\s+più\s+{AT}(?P<o>{NAME})", ended=True),
    _cue("lives_in", r"\b(?:[Pp]rima\s+)?(?:[Aa]bitavo|[Vv]ivevo|[Aa]bitavamo|[Vv]ivevamo)\s+{AT}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{VERB}\b[Ll]avoro\s+{ADV}{ORG}(?P<o>{NAME})"),
    _cue("works_at", r"\blavora\s+{ADV}{ORG}(?P<o>{NAME})", subject="person"),
    _cue("works_at", r"\b[Nn]on\s+lavoro\s+più\s+{ORG}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Pp]rima\s+)?[Ll]avoravo\s+{ORG}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b[Mm]i\s+sono\s+licenziat[oa]\s+{FROM}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b[Hh]o\s+lasciato\s+(?:il\s+(?:mio\s+)?(?:lavoro|posto)\s+(?:alla|al|in|da|presso)\s+|la\s+|il\s+|l['’])(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Hh]o\s+(?:iniziato|cominciato)\s+a\s+lavorare|[Ss]ono\s+entrat[oa])\s+{ORG}(?P<o>{NAME})"),
    _cue("works_at", r"\b[Ss]ono\s+stat[oa]\s+assunt[oa]\s+{FROM}(?P<o>{NAME})"),
    _cue("job_title", r"\b[Ss]ono\s+{ADV}(?:una\s+|un\s+|un['’])?(?P<o>{TITLE})\b"),
    _cue("job_title", r"\b[Ff]accio\s+(?:il\s+|la\s+|l['’])(?P<o>{TITLE})\b"),
    _cue("job_title", r"{VERB}\b[Ll]avoro\s+{ADV}come\s+(?P<o>[\wàèéìòù-]+)"),
    _cue("job_title", r"\bè\s+{ADV}(?:una\s+|un\s+|un['’])?(?P<o>{TITLE})\b", subject="person"),
    _cue("job_title", r"\bfa\s+(?:il\s+|la\s+|l['’])(?P<o>{TITLE})\b", subject="person"),
    _cue("studies_at", r"\b[Ss]tudio\s+{ADV}(?:[\wàèéìòù]+\s+)?{SCHOOL}(?P<o>{NAME})"),
    _cue("studies_at", r"\bstudia\s+{ADV}(?:[\wàèéìòù]+\s+)?{SCHOOL}(?P<o>{NAME})", subject="person"),
    _cue("partner", r"\b[Ss]ono\s+(?:sposat[oa]|fidanzat[oa])\s+con\s+(?P<o>{NAME})"),
    _cue("partner", r"\b[Ss]to\s+con\s+(?P<o>{NAME})"),
    _cue("partner", r"\bè\s+(?:sposat[oa]|fidanzat[oa])\s+con\s+(?P<o>{NAME})", subject="person"),
    _cue("has_pet", r"\b(?:[Hh]o|[Aa]bbiamo)\s+(?:una\s+|un\s+)?{PET}\s+(?:che\s+si\s+chiama|di\s+nome|chiamat[oa])\s+(?P<o>{NAME})"),
    _cue("has_pet", r"\b(?:(?:[Ii]l|[Ll]a)\s+)?(?:[Mm]io|[Mm]ia|[Nn]ostro|[Nn]ostra)\s+{PET}\s+si\s+chiama\s+(?P<o>{NAME})"),
    _cue("likes", r"\b(?:[Aa]doro|[Aa]mo|[Mm]i\s+piace|[Mm]i\s+piacciono|[Mm]i\s+fa\s+impazzire)\s+(?P<o>{THING})", thing=True),
    _cue("dislikes", r"\b(?:[Oo]dio|[Dd]etesto|[Nn]on\s+sopporto|[Nn]on\s+mi\s+piace|[Nn]on\s+mi\s+piacciono)\s+(?P<o>{THING})", thing=True),
)  # fmt: skip

PERSON = r"[A-ZÀÈÉÌÒÙ][\wàèéìòù'’-]+(?:\s+[A-ZÀÈÉÌÒÙ][\wàèéìòù'’-]+)?"
POSS = r"\b(?:(?:[Ii]l|[Ll]a|[Ii]|[Ll]e)\s+)?(?:[Mm]io|[Mm]ia|[Mm]iei|[Mm]ie|[Nn]ostro|[Nn]ostra)\s+"
ADJ = r"(?:(?:migliore|car[oa]|vecchi[oa])\s+)?"
AFTER = r"(?:\s+(?:maggiore|minore|più\s+grande|più\s+piccol[oa]))?"
KIN_WORDS = alternation(KIN)
INTRODUCTIONS = (
    re.compile(rf"{POSS}{ADJ}(?P<k>{KIN_WORDS}){AFTER}(?:\s+si\s+chiama\s+|\s*,\s*|\s+)(?P<n>{PERSON})"),
    re.compile(
        rf"(?<![\w])(?P<n>{PERSON})\s*,\s*(?:(?:il|la)\s+)?(?:mio|mia|nostro|nostra)\s+{ADJ}(?P<k>{KIN_WORDS})\b"
    ),
    re.compile(
        rf"(?<![\w])(?P<n>{PERSON})\s+è\s+(?:(?:il|la)\s+)?(?:mio|mia|nostro|nostra)\s+{ADJ}(?P<k>{KIN_WORDS})\b"
    ),
)
GRAMMAR = CueGrammar(
    cues=CUES,
    introductions=INTRODUCTIONS,
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    pronouns={"lei": "she", "lui": "he"},
    sentence_end=SENTENCE_END,
    clause_cut=re.compile(r"[,;:]|\s[-–—]\s|\b(?:e|ma|o|perché|però|anche\s+se|quando)\b"),
    question=QUESTION,
    block=re.compile(rf"(?<![\w])(?:{BLOCK_WORDS})(?![\w])", re.IGNORECASE),
    self_before=re.compile(r"\s*"),
    link=re.compile(r"\s*(?:,\s*)?(?:(?:e|anche|ora|adesso|già|ancora)\s+)*"),
    name=re.compile(r"\b(?:[Ll]ei|[Ll]ui|[A-ZÀÈÉÌÒÙ][\wàèéìòù-]+)\b(?!['’])"),
    not_names=frozenset(NOT_NAMES),
    article=re.compile(r"(?:il|lo|la|i|gli|le|un|una|uno)\s+|l['’]", re.IGNORECASE),
    honorifics=re.compile(r"^(?:Sig\.|Sig\.ra|Signor|Signora|Dott\.)\s+"),
)

VALIDITY = Validity(
    present=re.compile(r"\b(?:ora|adesso|attualmente|oggi|ancora|in\s+questo\s+momento|nuov[oa])\b", re.IGNORECASE),
    past=re.compile(r"\b(?:prima|precedentemente|una\s+volta|in\s+passato|vecchi[oa]|un\s+tempo)\b", re.IGNORECASE),
    predicates={
        "lives_in": re.compile(r"abit|viv|trasferit|città", re.IGNORECASE),
        "works_at": re.compile(r"lavor|azienda|ditta", re.IGNORECASE),
        "job_title": re.compile(r"mestiere|professione", re.IGNORECASE),
        "studies_at": re.compile(r"studi|università", re.IGNORECASE),
        "partner": re.compile(r"marito|moglie|ragazz[oa]|fidanzat|sposat", re.IGNORECASE),
    },
    sentences={
        "lives_in": "Abita a {o}",
        "works_at": "Lavora presso {o}",
        "job_title": "Lavora come {o}",
        "studies_at": "Studia presso {o}",
        "partner": "Partner: {o}",
        "sister": "Sorella: {o}",
        "brother": "Fratello: {o}",
        "mother": "Madre: {o}",
        "father": "Padre: {o}",
        "son": "Figlio: {o}",
        "daughter": "Figlia: {o}",
        "relative": "Parente di {o}",
        "friend": "Amico di {o}",
        "colleague": "Lavora con {o}",
        "has_pet": "Ha un animale di nome {o}",
        "likes": "Ama {o}",
        "dislikes": "Non ama {o}",
    },
    others={
        "lives_in": "{s} abita a {o}",
        "works_at": "{s} lavora presso {o}",
        "job_title": "{s} lavora come {o}",
        "studies_at": "{s} studia presso {o}",
    },
)

LEXICON = Lexicon(
    code="it",
    cues=GRAMMAR,
    first_person=re.compile(
        r"\b(?:[Ii]o|[Mm]io|[Mm]ia|[Mm]iei|[Mm]ie|[Mm]i|[Nn]oi|[Nn]ostr[oaie]|[Ss]ono|[Hh]o|[Aa]bito|[Ll]avoro|[Ss]tudio)\b"
    ),
    validity=VALIDITY,
)
