"""Spanish: the cues that state relations (first-person verb forms need no subject: "Vivo en Sevilla"), kin
words, pets, jobs, what blocks a reading (pure data)."""

from __future__ import annotations

import re

from .latin import QUESTION, SENTENCE_END, name, thing
from .types import CueGrammar, Lexicon, Validity, alternation, cue_maker

KIN = {
    "hermana": "sister", "hermano": "brother", "madre": "mother", "mamá": "mother", "mama": "mother",
    "padre": "father", "papá": "father", "papa": "father", "hijo": "son", "hija": "daughter",
    "marido": "partner", "esposo": "partner", "esposa": "partner", "mujer": "partner", "novio": "partner",
    "novia": "partner", "pareja": "partner", "prometido": "partner", "prometida": "partner",
    "amigo": "friend", "amiga": "friend", "mejor amigo": "friend", "mejor amiga": "friend", "colega": "colleague",
    "compañero de trabajo": "colleague", "compañera de trabajo": "colleague", "primo": "relative",
    "prima": "relative", "tío": "relative", "tía": "relative", "abuelo": "relative", "abuela": "relative",
    "sobrino": "relative", "sobrina": "relative", "nieto": "relative", "nieta": "relative",
    "compañero de piso": "", "compañera de piso": "", "vecino": "", "vecina": "", "jefe": "", "jefa": "",
}  # fmt: skip
SHE = {k for k in KIN if k.split()[-1].endswith("a") or k in ("mujer", "madre", "mamá", "pareja")}
HE = set(KIN) - SHE
PETS = ["perro", "perra", "perrito", "perrita", "gato", "gata", "gatito", "gatita", "conejo", "hámster", "loro",
        "pájaro", "tortuga", "caballo", "pez", "cachorro", "cachorra"]  # fmt: skip
JOBS = ["profesor", "profesora", "maestro", "maestra", "enfermero", "enfermera", "médico", "médica", "doctora",
        "ingeniero", "ingeniera", "abogado", "abogada", "programador", "programadora", "desarrollador",
        "desarrolladora", "diseñador", "diseñadora", "camarero", "camarera", "cocinero", "cocinera", "panadero",
        "panadera", "arquitecto", "arquitecta", "periodista", "dentista", "farmacéutico", "farmacéutica",
        "psicólogo", "psicóloga", "veterinario", "veterinaria", "contable", "electricista", "fontanero", "mecánico",
        "mecánica", "policía", "bombero", "bombera", "piloto", "conductor", "conductora", "traductor", "traductora",
        "investigador", "investigadora", "científico", "científica", "fotógrafo", "fotógrafa", "músico", "música",
        "actor", "actriz", "secretario", "secretaria", "vendedor", "vendedora", "dependiente", "dependienta",
        "gerente", "economista", "analista", "consultor", "consultora", "peluquero", "peluquera", "carpintero",
        "fisioterapeuta", "cajero", "cajera", "recepcionista", "bibliotecario", "bibliotecaria", "funcionario",
        "funcionaria", "empresario", "empresaria", "chef", "cirujano", "cirujana", "pediatra", "jardinero",
        "agricultor", "agricultora", "administrativo", "administrativa", "informático", "informática"]  # fmt: skip
NOT_NAMES = {w.casefold() for w in (
    "Yo", "Mi", "Mis", "Tu", "Su", "El", "La", "Los", "Las", "Un", "Una", "Por", "Fin", "Hoy", "Ayer", "Mañana",
    "Ahora", "Ya", "Que", "Qué", "Y", "Pero", "Soy", "Estoy", "Tengo", "Vivo", "Trabajo", "Estudio", "Me", "Nos",
    "Hola", "Gracias", "Sí", "No", "Bueno", "Pues", "Oye", "Casa", "Oficina", "Universidad", "Uni", "Facultad",
    "Escuela", "Colegio", "Empresa", "Trabajo", "Centro", "Ciudad", "Pueblo", "Campo", "Playa", "Lunes", "Martes",
    "Miércoles", "Jueves", "Viernes", "Sábado", "Domingo", "Navidad", "Semana", "Santa",
)} | set(KIN) | set(PETS)  # fmt: skip
BLOCK_WORDS = (
    "no|nunca|jamás|tampoco|si|quiero|quiere|quería|quisiera|querría|gustaría|ojalá|espero|esperamos|quizás|quizá|"
    "tal\\s+vez|a\\s+lo\\s+mejor|probablemente|posiblemente|voy\\s+a|vamos\\s+a|va\\s+a|iré|pienso|planeo|dijo|dice|"
    "dicen|cree|creo|creía|sería|podría|debería|algún\\s+día|próximo|próxima|mañana|puede\\s+que|igual|ni"
)
ADV = r"(?:(?:ahora|ya|todavía|aún|actualmente|también|desde\s+(?:hace\s+)?\w+(?:\s+\w+)?|aquí)\s+){0,2}"
INSTITUTION = r"(?=Universidad|Universitat|Instituto|Escuela|Colegio|Facultad|UNED|UNAM|IE\b|ESADE|IESE)"
PARTS = {
    "NAME": name(r"de|del|de\s+la|de\s+los|y"),
    "THING": thing(r"y|o|pero|porque|mucho|muchísimo|bastante|cuando|con|en|de|a|que|también|ahora"),
    "TITLE": alternation(JOBS),
    "PET": alternation(PETS),
    "ADV": ADV,
    "VERB": r"(?<!(?i:mi|tu|su|el|un)\s)(?<!(?i:ese)\s)",  # "mi trabajo en X": a noun
    "ART": r"(?:(?:el|la|los|las)\s+)?",
    "AT": rf"(?:en\s+(?:la|el)\s+|en\s+{INSTITUTION}|en\s+la\s+)",
}


_cue = cue_maker(PARTS)


CUES = (
    _cue("lives_in", r"\b(?:[Vv]ivo|[Rr]esido|[Vv]ivimos|[Rr]esidimos)\s+{ADV}en\s+(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:[Mm]e\s+(?:mudé|he\s+mudado|fui\s+a\s+vivir|trasladé|vine\s+a\s+vivir)|[Nn]os\s+(?:mudamos|hemos\s+mudado|fuimos\s+a\s+vivir|trasladamos|vinimos\s+a\s+vivir))\s+{ADV}(?:a|para)\s+(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:vive|reside)\s+{ADV}en\s+(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\bse\s+(?:mudó|ha\s+mudado|fue\s+a\s+vivir)\s+(?:a|para)\s+(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\b[Yy]a\s+no\s+(?:vivo|vivimos)\s+en\s+(?P<o>{NAME})", ended=True),
    _cue("lives_in", r"\b(?:[Aa]ntes\s+)?(?:vivía|vivíamos)\s+en\s+(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{VERB}\b[Tt]rabajo\s+{ADV}(?:en|para)\s+{ART}(?P<o>{NAME})"),
    _cue("works_at", r"\btrabaja\s+{ADV}(?:en|para)\s+{ART}(?P<o>{NAME})", subject="person"),
    _cue("works_at", r"\b[Yy]a\s+no\s+trabajo\s+(?:en|para)\s+{ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Aa]ntes\s+)?trabajaba\s+(?:en|para)\s+{ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Dd]ejé|[Hh]e\s+dejado)\s+(?:mi\s+(?:trabajo|puesto|empleo)\s+(?:en|de)\s+)?{ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Rr]enuncié|[Hh]e\s+renunciado|[Dd]imití)\s+(?:a\s+mi\s+(?:trabajo|puesto)\s+en\s+|a\s+|de\s+){ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b[Mm]e\s+(?:despidieron|echaron)\s+de\s+{ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Ee]mpecé|[Ee]ntré|[Hh]e\s+empezado|[Cc]omencé)\s+a\s+trabajar\s+(?:en|para)\s+{ART}(?P<o>{NAME})"),
    _cue("works_at", r"\b[Mm]e\s+(?:contrataron|han\s+contratado)\s+en\s+{ART}(?P<o>{NAME})"),
    _cue("job_title", r"\b[Ss]oy\s+{ADV}(?:una?\s+)?(?P<o>{TITLE})\b"),
    _cue("job_title", r"{VERB}\b[Tt]rabajo\s+{ADV}(?:como|de)\s+(?P<o>[\wáéíóúñü-]+)"),
    _cue("job_title", r"\bes\s+{ADV}(?:una?\s+)?(?P<o>{TITLE})\b", subject="person"),
    _cue("job_title", r"\btrabaja\s+{ADV}(?:como|de)\s+(?P<o>[\wáéíóúñü-]+)", subject="person"),
    _cue("studies_at", r"\b[Ee]studio\s+{ADV}(?:[\wáéíóúñü]+\s+)?{AT}(?P<o>{NAME})"),
    _cue("studies_at", r"\bestudia\s+{ADV}(?:[\wáéíóúñü]+\s+)?{AT}(?P<o>{NAME})", subject="person"),
    _cue("partner", r"\b[Ee]stoy\s+(?:casad[oa]|prometid[oa])\s+con\s+(?P<o>{NAME})"),
    _cue("partner", r"\b[Ss]algo\s+con\s+(?P<o>{NAME})"),
    _cue("partner", r"\bestá\s+(?:casad[oa]|prometid[oa])\s+con\s+(?P<o>{NAME})", subject="person"),
    _cue("has_pet", r"\b(?:[Tt]engo|[Tt]enemos)\s+(?:una?\s+)?{PET}\s+(?:que\s+se\s+llama|llamad[oa])\s+(?P<o>{NAME})"),
    _cue("has_pet", r"\b(?:[Mm]i|[Nn]uestr[oa])\s+{PET}\s+se\s+llama\s+(?P<o>{NAME})"),
    _cue("likes", r"\b(?:[Mm]e\s+(?:encantan?|gustan?(?:\s+mucho)?|chiflan?|fascinan?)|[Aa]doro|[Aa]mo)\s+(?P<o>{THING})", thing=True),
    _cue("dislikes", r"\b(?:[Oo]dio|[Dd]etesto|[Nn]o\s+soporto|[Nn]o\s+me\s+gustan?)\s+(?P<o>{THING})", thing=True),
)  # fmt: skip

PERSON = r"[A-ZÁÉÍÓÚÑ][\wáéíóúñü'’-]+(?:\s+[A-ZÁÉÍÓÚÑ][\wáéíóúñü'’-]+)?"
POSS = r"\b(?:[Mm]is?|[Nn]uestr[oa]s?)\s+"
ADJ = r"(?:(?:mejor|querid[oa]|viej[oa])\s+)?"
AFTER = r"(?:\s+(?:mayor|menor|pequeñ[oa]|mayores|menores))?"
KIN_WORDS = alternation(KIN)
INTRODUCTIONS = (
    re.compile(rf"{POSS}{ADJ}(?P<k>{KIN_WORDS}){AFTER}(?:\s+se\s+llama\s+|\s*,\s*|\s+)(?P<n>{PERSON})"),
    re.compile(rf"(?<![\w])(?P<n>{PERSON})\s*,\s*(?:mi|nuestr[oa])\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
    re.compile(rf"(?<![\w])(?P<n>{PERSON})\s+es\s+(?:mi|nuestr[oa])\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
)
GRAMMAR = CueGrammar(
    cues=CUES,
    introductions=INTRODUCTIONS,
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    pronouns={"ella": "she", "él": "he"},
    sentence_end=SENTENCE_END,
    clause_cut=re.compile(r"[,;:]|\s[-–—]\s|\b(?:y|e|pero|sino|o|porque|aunque|cuando)\b"),
    question=QUESTION,
    block=re.compile(rf"\b(?:{BLOCK_WORDS})\b", re.IGNORECASE),
    self_before=re.compile(r"\s*"),
    link=re.compile(r"\s*(?:,\s*)?(?:(?:y|también|ahora|ya|todavía|aún)\s+)*"),
    name=re.compile(r"\b(?:[Ee]lla|[Éé]l|[A-ZÁÉÍÓÚÑ][\wáéíóúñü-]+)\b"),
    not_names=frozenset(NOT_NAMES),
    article=re.compile(r"(?:el|la|los|las|un|una)\s+", re.IGNORECASE),
    honorifics=re.compile(r"^(?:Don|Doña|Sr\.|Sra\.)\s+"),
)

VALIDITY = Validity(
    present=re.compile(
        r"\b(?:ahora|actualmente|hoy\s+en\s+día|en\s+este\s+momento|todavía|aún|nuev[oa]s?)\b", re.IGNORECASE
    ),
    past=re.compile(
        r"\b(?:antes|anteriormente|solía|solías|antigu[oa]s?|en\s+el\s+pasado|previamente)\b", re.IGNORECASE
    ),
    predicates={
        "lives_in": re.compile(r"viv|mud|resid|ciudad", re.IGNORECASE),
        "works_at": re.compile(r"trabaj|empresa|empleo|curro", re.IGNORECASE),
        "job_title": re.compile(r"profesión|trabaja\s+de|trabaja\s+como", re.IGNORECASE),
        "studies_at": re.compile(r"estudi|universidad|facultad", re.IGNORECASE),
        "partner": re.compile(r"pareja|novi[oa]|marido|esposa|casad[oa]", re.IGNORECASE),
    },
    sentences={
        "lives_in": "Vive en {o}",
        "works_at": "Trabaja en {o}",
        "job_title": "Trabaja como {o}",
        "studies_at": "Estudia en {o}",
        "partner": "Su pareja es {o}",
        "sister": "Su hermana es {o}",
        "brother": "Su hermano es {o}",
        "mother": "Su madre es {o}",
        "father": "Su padre es {o}",
        "son": "Su hijo es {o}",
        "daughter": "Su hija es {o}",
        "relative": "Es familia de {o}",
        "friend": "Es amigo de {o}",
        "colleague": "Trabaja con {o}",
        "has_pet": "Tiene una mascota llamada {o}",
        "likes": "Le gusta {o}",
        "dislikes": "No le gusta {o}",
    },
    others={
        "lives_in": "{s} vive en {o}",
        "works_at": "{s} trabaja en {o}",
        "job_title": "{s} trabaja como {o}",
        "studies_at": "{s} estudia en {o}",
    },
)

LEXICON = Lexicon(
    code="es",
    cues=GRAMMAR,
    first_person=re.compile(
        r"\b(?:[Yy]o|[Mm]is?|[Mm]e|[Nn]os|[Nn]uestr[oa]s?|[Cc]onmigo|[Ss]oy|[Ee]stoy|[Tt]engo|[Vv]ivo|[Tt]rabajo|[Ee]studio)\b"
    ),
    validity=VALIDITY,
)
