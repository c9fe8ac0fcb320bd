"""Portuguese: the cues that state relations (first-person verb forms need no subject: "Moro em Curitiba"), kin
words, pets, jobs, what blocks a reading (pure data)."""

from __future__ import annotations

import re

from .latin import QUESTION, SENTENCE_END, name, thing
from .types import CueGrammar, Lexicon, Validity, alternation, cue_maker

KIN = {
    "irmã": "sister", "irmão": "brother", "mãe": "mother", "mamãe": "mother", "pai": "father", "papai": "father",
    "filho": "son", "filha": "daughter", "marido": "partner", "esposo": "partner", "esposa": "partner",
    "mulher": "partner", "namorado": "partner", "namorada": "partner", "noivo": "partner", "noiva": "partner",
    "companheiro": "partner", "companheira": "partner", "parceiro": "partner", "parceira": "partner",
    "amigo": "friend", "amiga": "friend", "melhor amigo": "friend", "melhor amiga": "friend",
    "colega de trabalho": "colleague", "colega": "colleague", "primo": "relative", "prima": "relative",
    "tio": "relative", "tia": "relative", "avó": "relative", "avô": "relative", "sobrinho": "relative",
    "sobrinha": "relative", "neto": "relative", "neta": "relative", "vizinho": "", "vizinha": "", "chefe": "",
}  # fmt: skip
SHE = {k for k in KIN if k.split()[-1].endswith(("a", "ã", "ó")) or k in ("mãe", "mamãe", "mulher")}
HE = set(KIN) - SHE - {"colega", "colega de trabalho", "chefe"}
PETS = ["cachorro", "cachorra", "cão", "cadela", "cachorrinho", "gato", "gata", "gatinho", "gatinha", "coelho",
        "hamster", "papagaio", "periquito", "tartaruga", "cavalo", "peixe", "calopsita"]  # fmt: skip
JOBS = ["professor", "professora", "enfermeiro", "enfermeira", "médico", "médica", "engenheiro", "engenheira",
        "advogado", "advogada", "programador", "programadora", "desenvolvedor", "desenvolvedora", "designer",
        "garçom", "garçonete", "cozinheiro", "cozinheira", "padeiro", "padeira", "arquiteto", "arquiteta",
        "jornalista", "dentista", "farmacêutico", "farmacêutica", "psicólogo", "psicóloga", "veterinário",
        "veterinária", "contador", "contadora", "eletricista", "encanador", "mecânico", "mecânica", "policial",
        "bombeiro", "bombeira", "piloto", "motorista", "tradutor", "tradutora", "pesquisador", "pesquisadora",
        "cientista", "fotógrafo", "fotógrafa", "músico", "musicista", "ator", "atriz", "secretário", "secretária",
        "vendedor", "vendedora", "cabeleireiro", "cabeleireira", "fisioterapeuta", "consultor", "consultora",
        "analista", "economista", "empresário", "empresária", "funcionário público", "funcionária pública",
        "bibliotecário", "bibliotecária", "cirurgião", "cirurgiã", "nutricionista", "caixa", "recepcionista",
        "agricultor", "agricultora", "chef"]  # fmt: skip
NOT_NAMES = {w.casefold() for w in (
    "Eu", "Meu", "Minha", "Meus", "Minhas", "O", "A", "Os", "As", "Um", "Uma", "Finalmente", "Hoje", "Ontem",
    "Amanhã", "Agora", "Já", "Que", "E", "Mas", "Sou", "Estou", "Tenho", "Moro", "Trabalho", "Estudo", "Olá", "Oi",
    "Obrigado", "Obrigada", "Sim", "Não", "Casa", "Escritório", "Faculdade", "Universidade", "Escola", "Empresa",
    "Centro", "Cidade", "Praia", "Segunda", "Terça", "Quarta", "Quinta", "Sexta", "Sábado", "Domingo", "Natal",
)} | set(KIN) | set(PETS)  # fmt: skip
BLOCK_WORDS = (
    "não|nunca|jamais|nem|se\\s+(?:eu|a\\s+gente|nós|você|ele|ela)|quero|queria|quer|gostaria|espero|talvez|"
    "provavelmente|vou|vamos|vai|irei|penso|acho|disse|diz|dizem|seria|poderia|deveria|um\\s+dia|próximo|"
    "próxima|amanhã|pretendo|sonho|planejo|planejamos|quem\\s+sabe"
)
ADV = r"(?:(?:agora|já|ainda|atualmente|também|aqui|desde\s+\w+(?:\s+\w+)?|há\s+\w+\s+\w+)\s+){0,2}"
INSTITUTION = r"(?=Universidade|Instituto|Escola|Faculdade|USP\b|Unicamp|UFRJ|UFMG|PUC)"
PARTS = {
    "NAME": name(r"de|do|da|dos|das|e"),
    "THING": thing(r"e|ou|mas|porque|muito|demais|quando|com|em|de|a|que|também|agora"),
    "TITLE": alternation(JOBS),
    "PET": alternation(PETS),
    "ADV": ADV,
    "IN": r"(?:em|no|na|nos|nas)\s+",
    "FOR": r"(?:(?:em|no|na|nos|nas)\s+|para\s+(?:a\s+|o\s+)?|pra\s+)",
    "FROM": r"(?:da|do|de|das|dos)\s+",
    "SCHOOL": rf"(?:na\s+|no\s+|em\s+{INSTITUTION})",
    "VERB": r"(?<!(?i:meu|seu|teu|num)\s)(?<!(?i:um|do|no)\s)(?<!\b[Oo]\s)",  # "meu trabalho na X": a noun
}


_cue = cue_maker(PARTS)


CUES = (
    _cue("lives_in", r"\b(?:[Mm]oro|[Vv]ivo|[Mm]oramos|[Vv]ivemos|[Rr]esido)\s+{ADV}{IN}(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:(?:[Mm]e\s+)?[Mm]udei(?:-me)?|(?:[Nn]os\s+)?[Mm]udamos|[Ff]ui\s+morar|[Ff]omos\s+morar|[Nn]os\s+mudamos|[Aa]\s+gente\s+se\s+mudou)\s+{ADV}(?:para|pra|em|no|na)\s+(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:mora|vive|reside)\s+{ADV}{IN}(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\b(?:se\s+mudou|mudou-se|foi\s+morar)\s+(?:para|pra|em|no|na)\s+(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\b(?:[Nn]ão\s+(?:moro|vivo|moramos)\s+mais|[Jj]á\s+não\s+(?:moro|vivo|moramos))\s+{IN}(?P<o>{NAME})", ended=True),
    _cue("lives_in", r"\b(?:[Aa]ntes\s+)?(?:[Mm]orava|[Vv]ivia|[Mm]orávamos)\s+{IN}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{VERB}\b[Tt]rabalho\s+{ADV}{FOR}(?P<o>{NAME})"),
    _cue("works_at", r"\btrabalha\s+{ADV}{FOR}(?P<o>{NAME})", subject="person"),
    _cue("works_at", r"\b(?:[Nn]ão\s+trabalho\s+mais|[Jj]á\s+não\s+trabalho)\s+{FOR}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Aa]ntes\s+)?[Tt]rabalhava\s+{FOR}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Pp]edi\s+demissão|[Ss]aí\s+do\s+meu\s+emprego|[Ll]arguei\s+(?:o\s+)?meu\s+emprego|[Ff]ui\s+demitid[oa])\s+{FROM}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"\b(?:[Cc]omecei|[Cc]omecei\s+hoje)\s+a\s+trabalhar\s+{FOR}(?P<o>{NAME})"),
    _cue("works_at", r"\b[Ff]ui\s+contratad[oa]\s+(?:pela|pelo)\s+(?P<o>{NAME})"),
    _cue("job_title", r"\b[Ss]ou\s+{ADV}(?:uma?\s+)?(?P<o>{TITLE})\b"),
    _cue("job_title", r"{VERB}\b[Tt]rabalho\s+{ADV}como\s+(?P<o>[\wáéíóúâêôãõç-]+)"),
    _cue("job_title", r"\bé\s+{ADV}(?:uma?\s+)?(?P<o>{TITLE})\b", subject="person"),
    _cue("job_title", r"\btrabalha\s+{ADV}como\s+(?P<o>[\wáéíóúâêôãõç-]+)", subject="person"),
    _cue("studies_at", r"\b[Ee]studo\s+{ADV}(?:[\wáéíóúâêôãõç]+\s+)?{SCHOOL}(?P<o>{NAME})"),
    _cue("studies_at", r"\bestuda\s+{ADV}(?:[\wáéíóúâêôãõç]+\s+)?{SCHOOL}(?P<o>{NAME})", subject="person"),
    _cue("partner", r"\b[Ss]ou\s+(?:casad[oa]|noiv[oa])\s+com\s+(?:o\s+|a\s+)?(?P<o>{NAME})"),
    _cue("partner", r"\b[Nn]amoro\s+(?:com\s+)?(?:o\s+|a\s+)?(?P<o>{NAME})"),
    _cue("partner", r"\bé\s+(?:casad[oa]|noiv[oa])\s+com\s+(?:o\s+|a\s+)?(?P<o>{NAME})", subject="person"),
    _cue("has_pet", r"\b(?:[Tt]enho|[Tt]emos)\s+(?:uma?\s+)?{PET}\s+(?:chamad[oa]|que\s+se\s+chama)\s+(?P<o>{NAME})"),
    _cue("has_pet", r"\b(?:[Mm]eu|[Mm]inha|[Nn]osso|[Nn]ossa)\s+{PET}\s+(?:se\s+chama|chama-se)\s+(?P<o>{NAME})"),
    _cue("likes", r"\b(?:[Aa]doro|[Aa]mo|[Cc]urto|[Gg]osto\s+(?:muito\s+)?(?:de|do|da|dos|das))\s+(?P<o>{THING})", thing=True),
    _cue("dislikes", r"\b(?:[Oo]deio|[Dd]etesto|[Nn]ão\s+suporto|[Nn]ão\s+gosto\s+(?:de|do|da|dos|das))\s+(?P<o>{THING})", thing=True),
)  # fmt: skip

PERSON = r"[A-ZÁÉÍÓÚÂÊÔÃÕÇ][\wáéíóúâêôãõç'’-]+(?:\s+[A-ZÁÉÍÓÚÂÊÔÃÕÇ][\wáéíóúâêôãõç'’-]+)?"
POSS = r"\b(?:(?:[Aa]|[Oo])\s+)?(?:[Mm]inha|[Mm]eu|[Mm]inhas|[Mm]eus|[Nn]ossa|[Nn]osso)\s+"
ADJ = r"(?:(?:melhor|querid[oa])\s+)?"
AFTER = r"(?:\s+(?:mais\s+velh[oa]|mais\s+nov[oa]|caçula))?"
KIN_WORDS = alternation(KIN)
INTRODUCTIONS = (
    re.compile(
        rf"{POSS}{ADJ}(?P<k>{KIN_WORDS}){AFTER}(?:\s+se\s+chama\s+|\s+chamad[oa]\s+|\s*,\s*|\s+)(?P<n>{PERSON})"
    ),
    re.compile(rf"(?<![\w])(?P<n>{PERSON})\s*,\s*(?:minha|meu|nossa|nosso)\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
    re.compile(rf"(?<![\w])(?P<n>{PERSON})\s+é\s+(?:a\s+|o\s+)?(?:minha|meu|nossa|nosso)\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
)
GRAMMAR = CueGrammar(
    cues=CUES,
    introductions=INTRODUCTIONS,
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    pronouns={"ela": "she", "ele": "he"},
    sentence_end=SENTENCE_END,
    clause_cut=re.compile(r"[,;:]|\s[-–—]\s|\b(?:e|mas|ou|porque|porém|embora|quando)\b"),
    question=QUESTION,
    block=re.compile(rf"(?<![\w])(?:{BLOCK_WORDS})(?![\w])", re.IGNORECASE),
    self_before=re.compile(r"\s*"),
    link=re.compile(r"\s*(?:,\s*)?(?:(?:e|também|agora|já|ainda)\s+)*"),
    name=re.compile(r"\b(?:[Ee]la|[Ee]le|[A-ZÁÉÍÓÚÂÊÔÃÕÇ][\wáéíóúâêôãõç-]+)\b"),
    not_names=frozenset(NOT_NAMES),
    article=re.compile(r"(?:o|a|os|as|um|uma)\s+", re.IGNORECASE),
    honorifics=re.compile(r"^(?:Dona|Seu|Sr\.|Sra\.)\s+"),
)

VALIDITY = Validity(
    present=re.compile(r"\b(?:agora|atualmente|hoje\s+em\s+dia|no\s+momento|ainda|nov[oa]s?)\b", re.IGNORECASE),
    past=re.compile(r"\b(?:antes|anteriormente|antigamente|costumava|antig[oa]s?|no\s+passado)\b", re.IGNORECASE),
    predicates={
        "lives_in": re.compile(r"mor|viv|mud|cidade", re.IGNORECASE),
        "works_at": re.compile(r"trabalh|emprego|empresa", re.IGNORECASE),
        "job_title": re.compile(r"profissão", re.IGNORECASE),
        "studies_at": re.compile(r"estud|universidade|faculdade", re.IGNORECASE),
        "partner": re.compile(r"marido|esposa|namorad|casad", re.IGNORECASE),
    },
    sentences={
        "lives_in": "Mora em {o}",
        "works_at": "Trabalha em {o}",
        "job_title": "Trabalha como {o}",
        "studies_at": "Estuda em {o}",
        "partner": "Parceiro(a): {o}",
        "sister": "Irmã: {o}",
        "brother": "Irmão: {o}",
        "mother": "Mãe: {o}",
        "father": "Pai: {o}",
        "son": "Filho: {o}",
        "daughter": "Filha: {o}",
        "relative": "Parente de {o}",
        "friend": "Amigo(a) de {o}",
        "colleague": "Trabalha com {o}",
        "has_pet": "Tem um animal chamado {o}",
        "likes": "Gosta de {o}",
        "dislikes": "Não gosta de {o}",
    },
    others={
        "lives_in": "{s} mora em {o}",
        "works_at": "{s} trabalha em {o}",
        "job_title": "{s} trabalha como {o}",
        "studies_at": "{s} estuda em {o}",
    },
)

LEXICON = Lexicon(
    code="pt",
    cues=GRAMMAR,
    first_person=re.compile(
        r"\b(?:[Ee]u|[Mm]eus?|[Mm]inhas?|[Mm]e|[Nn]ós|[Nn]oss[oa]s?|[Ss]ou|[Tt]enho|[Mm]oro|[Tt]rabalho|[Ee]studo)\b"
    ),
    validity=VALIDITY,
)
