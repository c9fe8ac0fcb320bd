"""French: the cues that state relations, kin words, pets, jobs, what blocks a reading (pure data)."""

from __future__ import annotations

import re

from .latin import QUESTION, SENTENCE_END, name, thing
from .types import CueGrammar, Lexicon, Validity, alternation, cue_maker

KIN = {
    "sœur": "sister", "soeur": "sister", "frère": "brother", "mère": "mother", "maman": "mother",
    "père": "father", "papa": "father", "fils": "son", "fille": "daughter", "mari": "partner", "femme": "partner",
    "époux": "partner", "épouse": "partner", "copain": "partner", "copine": "partner", "petit ami": "partner",
    "petite amie": "partner", "compagnon": "partner", "compagne": "partner", "fiancé": "partner",
    "fiancée": "partner", "conjoint": "partner", "conjointe": "partner", "ami": "friend", "amie": "friend",
    "meilleur ami": "friend", "meilleure amie": "friend", "pote": "friend", "collègue": "colleague",
    "cousin": "relative", "cousine": "relative", "oncle": "relative", "tante": "relative",
    "grand-mère": "relative", "grand-père": "relative", "mamie": "relative", "papi": "relative",
    "neveu": "relative", "nièce": "relative", "petit-fils": "relative", "petite-fille": "relative",
    "coloc": "", "colocataire": "", "voisin": "", "voisine": "", "patron": "", "patronne": "", "chef": "",
}  # fmt: skip
SHE = {"sœur", "soeur", "mère", "maman", "fille", "femme", "épouse", "copine", "petite amie", "compagne", "fiancée",
       "conjointe", "amie", "meilleure amie", "cousine", "tante", "grand-mère", "mamie", "nièce", "petite-fille",
       "voisine", "patronne"}  # fmt: skip
HE = set(KIN) - SHE - {"collègue", "coloc", "colocataire", "pote", "chef"}
PETS = ["chien", "chienne", "chiot", "chat", "chatte", "chaton", "lapin", "hamster", "perroquet", "oiseau",
        "tortue", "cheval", "poisson", "cochon d'inde", "furet"]  # fmt: skip
JOBS = ["infirmier", "infirmière", "professeur", "professeure", "prof", "enseignant", "enseignante", "médecin",
        "ingénieur", "ingénieure", "développeur", "développeuse", "avocat", "avocate", "boulanger", "boulangère",
        "cuisinier", "cuisinière", "serveur", "serveuse", "architecte", "journaliste", "dentiste", "pharmacien",
        "pharmacienne", "psychologue", "vétérinaire", "comptable", "électricien", "électricienne", "plombier",
        "mécanicien", "mécanicienne", "policier", "policière", "pompier", "pilote", "chauffeur", "traducteur",
        "traductrice", "chercheur", "chercheuse", "photographe", "musicien", "musicienne", "acteur", "actrice",
        "secrétaire", "vendeur", "vendeuse", "caissier", "caissière", "coiffeur", "coiffeuse", "kiné",
        "kinésithérapeute", "designer", "graphiste", "consultant", "consultante", "instituteur", "institutrice",
        "agriculteur", "agricultrice", "facteur", "banquier", "banquière", "chef de projet", "chirurgien",
        "chirurgienne", "fonctionnaire", "informaticien", "informaticienne", "sage-femme", "aide-soignant",
        "aide-soignante", "éducateur", "éducatrice", "entrepreneur", "entrepreneuse", "analyste", "programmeur",
        "programmeuse", "libraire", "bibliothécaire", "menuisier", "peintre"]  # fmt: skip
NOT_NAMES = {w.casefold() for w in (
    "Je", "J", "Tu", "Il", "Elle", "On", "Nous", "Vous", "Mon", "Ma", "Mes", "Le", "La", "Les", "Un", "Une", "Et",
    "Mais", "Aujourd'hui", "Hier", "Demain", "Maintenant", "Enfin", "Bon", "Bonjour", "Salut", "Merci", "Oui",
    "Non", "Lundi", "Mardi", "Mercredi", "Jeudi", "Vendredi", "Samedi", "Dimanche", "Noël", "Pâques", "Maison",
    "Bureau", "Travail", "Boulot", "Fac", "Université", "École", "Entreprise", "Ville", "Campagne", "Centre",
)} | set(KIN) | set(PETS)  # fmt: skip
BLOCK_WORDS = (
    "ne|n['’]|pas|jamais|si|s['’]il|voudrais|voudrait|aimerais|aimerait|veux|veut|voulais|rêve|espère|"
    "peut-être|probablement|sans\\s+doute|vais|va|allons|vont|irai|pense|pensais|crois|dit|disait|serait|"
    "pourrais|pourrait|devrais|un\\s+jour|prochain|prochaine|demain|bientôt|envisage|compte|projet"
)
ADV = r"(?:(?:maintenant|actuellement|désormais|toujours|aussi|enfin|déjà|depuis\s+(?:\w+\s+)?\w+|ici)\s+){0,2}"
AT = r"(?:à\s+|au\s+|aux\s+|en\s+)"
INSTITUTION = r"(?=Université|Sciences\s+Po|École|Ecole|HEC|Polytechnique|Institut|Lycée|ESSEC|ENS\b|INSA|EPFL)"
PARTS = {
    "NAME": name(r"de|du|des|de\s+la|la|le|sur|en|et"),
    "THING": thing(r"et|ou|mais|parce|beaucoup|vraiment|trop|quand|avec|en|de|à|que|aussi|maintenant"),
    "TITLE": alternation(JOBS),
    "PET": alternation(PETS),
    "ADV": ADV,
    "AT": AT,
    "ORG": r"(?:chez|pour)\s+",
    "ART": r"(?:(?:le|la|les|l['’])\s*)?",
    "SCHOOL": rf"(?:à\s+la\s+|à\s+l['’]|au\s+|à\s+{INSTITUTION}|en\s+{INSTITUTION})",
    "I": r"(?:[Jj]e\s+|[Jj]['’])",
}


_cue = cue_maker(PARTS)


CUES = (
    _cue("lives_in", r"(?:{I}(?:habite|vis|réside)|[Nn]ous\s+(?:habitons|vivons)|[Oo]n\s+(?:habite|vit))\s+{ADV}{AT}(?P<o>{NAME})"),
    _cue("lives_in", r"(?:{I}(?:ai\s+déménagé|ai\s+emménagé|suis\s+installée?|me\s+suis\s+installée?|suis\s+partie?\s+vivre)|[Oo]n\s+(?:a\s+déménagé|a\s+emménagé|s['’]est\s+installés?)|[Nn]ous\s+(?:avons\s+déménagé|avons\s+emménagé|nous\s+sommes\s+installés))\s+{ADV}{AT}(?P<o>{NAME})"),
    _cue("lives_in", r"\b(?:habite|vit|réside)\s+{ADV}{AT}(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"\b(?:a\s+déménagé|s['’]est\s+installée?)\s+{AT}(?P<o>{NAME})", subject="person"),
    _cue("lives_in", r"(?:{I}n['’]habite\s+plus|[Jj]e\s+ne\s+vis\s+plus|[Oo]n\s+n['’]habite\s+plus)\s+{AT}(?P<o>{NAME})", ended=True),
    _cue("lives_in", r"(?:{I}(?:habitais|vivais)|[Oo]n\s+(?:habitait|vivait))\s+{AT}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{I}(?:travaille|bosse)\s+{ADV}{ORG}{ART}(?P<o>{NAME})"),
    _cue("works_at", r"\b(?:travaille|bosse)\s+{ADV}{ORG}{ART}(?P<o>{NAME})", subject="person"),
    _cue("works_at", r"{I}ne\s+(?:travaille|bosse)\s+plus\s+{ORG}{ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{I}(?:travaillais|bossais)\s+{ORG}{ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{I}ai\s+démissionné\s+(?:de\s+chez\s+|de\s+|d['’])(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{I}ai\s+quitté\s+(?:mon\s+(?:poste|job|travail|boulot|emploi)\s+(?:chez|à)\s+){ART}(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{I}ai\s+été\s+(?:licenciée?|viréee?)\s+(?:de\s+chez\s+|de\s+|d['’])(?P<o>{NAME})", ended=True),
    _cue("works_at", r"{I}ai\s+(?:commencé|débuté)\s+(?:à\s+travailler\s+)?(?:chez|pour)\s+{ART}(?P<o>{NAME})"),
    _cue("works_at", r"{I}ai\s+été\s+(?:embauchée?|recrutée?)\s+(?:chez|par)\s+{ART}(?P<o>{NAME})"),
    _cue("job_title", r"{I}suis\s+{ADV}(?:une?\s+)?(?P<o>{TITLE})\b"),
    _cue("job_title", r"{I}(?:travaille|bosse)\s+{ADV}comme\s+(?P<o>[\wéèêàâîôûç-]+)"),
    _cue("job_title", r"\best\s+{ADV}(?:une?\s+)?(?P<o>{TITLE})\b", subject="person"),
    _cue("studies_at", r"{I}(?:étudie|fais\s+mes\s+études)\s+{ADV}(?:[\wéèêàç]+\s+)?{SCHOOL}(?P<o>{NAME})"),
    _cue("studies_at", r"\bétudie\s+{ADV}(?:[\wéèêàç]+\s+)?{SCHOOL}(?P<o>{NAME})", subject="person"),
    _cue("partner", r"{I}suis\s+(?:mariée?|fiancée?|pacsée?|en\s+couple)\s+(?:avec|à)\s+(?P<o>{NAME})"),
    _cue("partner", r"{I}sors\s+avec\s+(?P<o>{NAME})"),
    _cue("partner", r"\best\s+(?:mariée?|fiancée?|pacsée?|en\s+couple)\s+(?:avec|à)\s+(?P<o>{NAME})", subject="person"),
    _cue("has_pet", r"(?:{I}ai|[Nn]ous\s+avons|[Oo]n\s+a)\s+(?:une?\s+)?{PET}\s+(?:qui\s+s['’]appelle|nommée?|appelée?|du\s+nom\s+de)\s+(?P<o>{NAME})"),
    _cue("has_pet", r"\b(?:[Mm]on|[Mm]a|[Nn]otre)\s+{PET}\s+s['’]appelle\s+(?P<o>{NAME})"),
    _cue("likes", r"{I}(?:adore|aime(?:\s+bien|\s+beaucoup)?|kiffe)\s+(?P<o>{THING})", thing=True),
    _cue("likes", r"{I}suis\s+(?:fan|passionnée?|fou|folle)\s+(?:de|du|des|d['’])\s*(?P<o>{THING})", thing=True),
    _cue("dislikes", r"(?:{I}(?:déteste|hais|ai\s+horreur\s+(?:de|du|des|d['’]))|[Jj]e\s+n['’]aime\s+pas)\s*(?P<o>{THING})", thing=True),
)  # fmt: skip

PERSON = r"[A-ZÀÂÉÈÊÎÔÛÇ][\wàâäéèêëîïôöûüç'’-]+(?:\s+[A-ZÀÂÉÈÊÎÔÛÇ][\wàâäéèêëîïôöûüç'’-]+)?"
POSS = r"\b(?:[Mm]on|[Mm]a|[Mm]es|[Nn]otre|[Nn]os)\s+"
ADJ = r"(?:(?:meilleur|meilleure|petit|petite|grand|grande|cher|chère|vieux|vieille)\s+)?"
KIN_WORDS = alternation(KIN)
INTRODUCTIONS = (
    re.compile(rf"{POSS}{ADJ}(?P<k>{KIN_WORDS})(?:\s+s['’]appelle\s+|\s*,\s*|\s+)(?P<n>{PERSON})"),
    re.compile(rf"(?<![\w])(?P<n>{PERSON})\s*,\s*(?:mon|ma|notre)\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
    re.compile(rf"(?<![\w])(?P<n>{PERSON})\s+est\s+(?:mon|ma|notre)\s+{ADJ}(?P<k>{KIN_WORDS})\b"),
)
GRAMMAR = CueGrammar(
    cues=CUES,
    introductions=INTRODUCTIONS,
    kin=KIN,
    she=frozenset(SHE),
    he=frozenset(HE),
    pronouns={"elle": "she", "il": "he"},
    sentence_end=SENTENCE_END,
    clause_cut=re.compile(r"[,;:]|\s[-–—]\s|\b(?:et|mais|ou|car|parce\s+que|quand|puisque)\b"),
    question=QUESTION,
    block=re.compile(rf"(?<![\w])(?:{BLOCK_WORDS})(?![\w])", re.IGNORECASE),
    self_before=re.compile(r"\s*"),
    link=re.compile(r"\s*(?:,\s*)?(?:(?:et|aussi|maintenant|déjà|toujours)\s+)*"),
    name=re.compile(r"\b(?:[Ee]lle|[Ii]l|[A-ZÀÂÉÈÊÎÔÛÇ][\wàâäéèêëîïôöûüç-]+)\b(?!['’])"),
    not_names=frozenset(NOT_NAMES),
    article=re.compile(r"(?:le|la|les|un|une|des|du)\s+|l['’]", re.IGNORECASE),
    honorifics=re.compile(r"^(?:M\.|Mme|Mlle|Monsieur|Madame)\s+"),
)

VALIDITY = Validity(
    present=re.compile(
        r"\b(?:maintenant|actuellement|en\s+ce\s+moment|aujourd'hui|toujours|encore|nouveau|nouvelle)\b", re.IGNORECASE
    ),
    past=re.compile(
        r"\b(?:avant|auparavant|autrefois|anciennement|ancien|ancienne|précédent|précédente|jadis)\b", re.IGNORECASE
    ),
    predicates={
        "lives_in": re.compile(r"habit|\bvi[tsv]|déménag|ville", re.IGNORECASE),
        "works_at": re.compile(r"travaill|boulot|job|entreprise|boîte", re.IGNORECASE),
        "job_title": re.compile(r"métier|profession", re.IGNORECASE),
        "studies_at": re.compile(r"étudi|université|\bfac\b", re.IGNORECASE),
        "partner": re.compile(r"\bmari\b|femme|copain|copine|conjoint|marié", re.IGNORECASE),
    },
    sentences={
        "lives_in": "Habite à {o}",
        "works_at": "Travaille chez {o}",
        "job_title": "Travaille comme {o}",
        "studies_at": "Étudie à {o}",
        "partner": "En couple avec {o}",
        "sister": "Sa sœur : {o}",
        "brother": "Son frère : {o}",
        "mother": "Sa mère : {o}",
        "father": "Son père : {o}",
        "son": "Son fils : {o}",
        "daughter": "Sa fille : {o}",
        "relative": "Apparenté à {o}",
        "friend": "Ami de {o}",
        "colleague": "Travaille avec {o}",
        "has_pet": "A un animal nommé {o}",
        "likes": "Aime {o}",
        "dislikes": "N'aime pas {o}",
    },
    others={
        "lives_in": "{s} habite à {o}",
        "works_at": "{s} travaille chez {o}",
        "job_title": "{s} travaille comme {o}",
        "studies_at": "{s} étudie à {o}",
    },
)

LEXICON = Lexicon(
    code="fr",
    cues=GRAMMAR,
    first_person=re.compile(r"(?:\b(?:[Jj]e|[Mm]oi|[Mm]on|[Mm]a|[Mm]es|[Nn]ous|[Nn]otre|[Nn]os|[Oo]n)\b|\b[Jj]['’])"),
    validity=VALIDITY,
)
