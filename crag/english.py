"""English: every word list, pattern and word-frequency cut-off crag's rules read, in one place.
Word frequencies are wordfreq's Zipf scale (7 for "the", 0 for an unknown word)."""

from __future__ import annotations

import re
from functools import lru_cache

# the language the libraries are told: Snowball's stemmer, bm25s' stop words, pysbd's sentences
STEMMER = "english"
LANGUAGE = "en"

# --- text
# questions carry words that passages do not (bm25s' English list has no "what" or "who")
QUESTION_WORDS = frozenset(
    "what who whom whose which when where why how whats does did do can could should would will shall may might "
    "i me my we our you your he she his her him they them their its there here been has have had was were am "
    "this these those than then so about tell anyone anybody someone somebody know".split()
)

# contractions typed without the apostrophe, rare enough to pass for a subject ("whos" 3.1); not those
# that are words of their own ("ill", "wont", "well")
CONTRACTIONS = frozenset(
    "hows wheres whos whens whys thats theres heres dont doesnt didnt isnt arent wasnt werent cant couldnt "
    "wouldnt shouldnt hasnt havent hadnt mustnt neednt im ive youre youve youll youd theyre theyve weve".split()
)


# --- knowledge.web_query
STOPWORDS = frozenset(
    "a an the of in on at to for from by with about as into over after before between is are was were be been "
    "being do does did what which who whom whose when where why how that this these those it its and or but "
    "not no yes there their they he she his her him them you your i me my we our us".split()
)

# a run of capitalised words, allowing the lower-case particles of names ("Duke of York", "Ludwig van Beethoven")
NAME_RUN = re.compile(r"[A-Z][\w'’.-]*(?:\s+(?:(?:of|de|da|del|von|van|the|la|le)\s+)?[A-Z][\w'’.-]*)*")

SENTENCE_WORD_ZIPF = 4.0  # a question's capitalised first word this common is no name: "Explain", "Describe"

RARE_ZIPF = 3.0  # wordfreq's Zipf scale: below 3 (fewer than one in a million words) a word names something


# --- questions.pronouns
SUBJECT = r"he|she|it|they|him|them|there"

POSSESSIVE = r"his|her|hers|its|their|theirs"

AUXILIARIES = frozenset("is are was were do does did can could will would should has have had".split())

# words that make a name a thing, not a person: "University of Tokyo", "Lake Baikal", "Python Software Foundation"
THING_WORDS = frozenset(
    "university college school institute academy river lake sea ocean mountain mount island city county state "
    "province republic kingdom empire company corporation inc ltd llc group club team band orchestra choir museum "
    "church cathedral temple library foundation society association party league cup award prize hospital airport "
    "station bridge street road avenue park war battle festival film album song book novel series show project "
    "framework language protocol software system act treaty bank council army navy records studios".split()
)

PRONOUN_KIND = {
    **dict.fromkeys(("he", "she", "him", "his", "her", "hers"), "person"),
    **dict.fromkeys(("it", "its"), "thing"),
    **dict.fromkeys(("they", "them", "their", "theirs"), "group"),
    "there": "place",
}

# "this library", "that person": a demonstrative with a noun that says what kind of referent it is
DEMONSTRATIVE = re.compile(
    r"\b(?:this|that|these|those)\s+(?P<noun>library|package|tool|project|module|framework|program|command|"
    r"function|option|language|book|film|album|song|company|band|team|city|country|place|person|man|woman|one)\b"
    r"|\b(?:this|that)(?=\s*\?*\s*$)",
    re.IGNORECASE,
)

PERSON_NOUNS = frozenset({"person", "man", "woman"})

# "Is there a way …", "Are there any …": the existential there refers to nothing
EXISTENTIAL_THERE = re.compile(
    r"\b(?:is|are|was|were)\s+there\s+(?:a|an|any|some|no|another|anything|more)\b"
    r"|\bthere\s+(?:is|are|was|were|'s)\b",
    re.IGNORECASE,
)

# a boundary between an antecedent and its pronoun inside the question: "What is FastAPI and who wrote it?"
CLAUSE = re.compile(
    r"\b(?:and|but|or|if|when|whenever|after|before|once|until|unless|because|since|while|so|which|where|whether)\b",
    re.IGNORECASE,
)

INDEFINITE = re.compile(r"\b(?:a|an)\s+[A-Za-z][\w-]*", re.IGNORECASE)

# "what kinds of dpkg triggers are there": existential at the end when the question names its subject
TRAILING_THERE = re.compile(r"\b(?:is|are|was|were)\s+(?P<there>there)\W*$", re.IGNORECASE)

# the expletive "it" of "is it possible to …", "it is safe to …", "how long does it take to …"
EXPLETIVE_IT = re.compile(
    r"\b(?:(?:is|was|isn't|wasn't|would|will)\s+(?P<it>it)(?:\s+be)?|(?P<it2>it)(?:\s+is|\s+was|'s))\s+"
    r"(?:possible|impossible|safe|ok|okay|necessary|better|best|worth|wise|advisable|recommended|required|"
    r"allowed|normal|bad|good|important|hard|easy|faster|slower|common|true|needed)\s+(?:to|that|if|whether)\b"
    r"|\bdoes\s+(?P<it3>it)\s+take\s+(?:\w+\s+){0,3}?to\b",
    re.IGNORECASE,
)

# "that" is a demonstrative after these words or at the start ("Is that true?"); after any other word it is a
# relative pronoun or a conjunction ("the option that skips …", "make sure that …")
BEFORE_DEMONSTRATIVE = AUXILIARIES | frozenset(
    "do about of for with to from in on at by like into after before than and or but what how why when where who "
    "whom which does".split()
)

# what may follow "to <verb>" when the verb has no object of its own: the end, or a preposition or adverb
NO_OBJECT = re.compile(
    r"^\s*\w+(?:\s*[?.!]|\s*$|\s+(?:across|in|on|with|from|for|at|by|between|inside|outside|without|after|before|"
    r"during|over|under|here|there|now|again|together|concurrently|directly|alone|safely|yet)\b)",
    re.IGNORECASE,
)


# --- questions.followup
REFERS_BACK = re.compile(
    rf"\b({SUBJECT}|{POSSESSIVE}|this|that|these|those|then|the same|the former|the latter)\b"
    r"|^\s*(and|what about|how about)\b",
    re.IGNORECASE,
)

# "And httpx?", not "And how do I add elements to it?": a question behind "and" has its own pronouns
ELLIPSIS = re.compile(
    r"^\s*(and|what about|how about)\s+"
    r"(?!(?:how|what|who|whom|whose|where|when|why|which|is|are|was|were|do|does|did|can|could|should|will|would)\b)"
    r"(?P<entity>.+?)\s*\??\s*$",
    re.IGNORECASE,
)

# "What about npm install, does it update the lock file?": the new topic, then a question about it
TOPIC_FIRST = re.compile(
    r"^\s*(?:and|what about|how about)\s+(?P<entity>[^,;?]+?)\s*[,;]\s*(?P<rest>\S.*)$", re.IGNORECASE
)

# "Swedish", "English", "Japanese", "American" before a noun describe; they name no referent
DEMONYM = re.compile(r"[A-Z][a-z]+(?:ish|ese|ian|an|i)")

# the thing a question defines or acts on, though its words are common ("What is a closure in Rust?"); for a
# how-question only for a pronoun that is not the follow-up's subject ("Does it …?" asks about the undoing)
NP_WORD = r"(?!(?:in|of|for|on|with|from|to|by|at|into|and|or|than|when|if|is|are|do|does|that)\b)[\w<>:.#+-]+"

ASKED_THING = re.compile(
    r"^\s*(?:(?P<what>(?:what|which)\s+(?:is|are|was|were))"
    r"|how\s+(?:do|can|could|should|would|to)\s+(?:i|you|we|one\s+)?\s*\w+)"
    rf"\s+(?P<np>(?:a|an|the|my|your|our)\s+{NP_WORD}(?:\s+{NP_WORD}){{0,2}})",
    re.IGNORECASE,
)

# a follow-up whose subject is the pronoun: "Does it …?", "Is it …?", "And can they …?"
PRONOUN_SUBJECT = re.compile(
    r"^\s*(?:and\s+)?(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have)\s+(?:it|they)\b",
    re.IGNORECASE,
)


# --- answers.attribution
# a question's rarest word names its subject at most this common ("Lovelace" 2.7; "country" 5.5 names nothing)
SUBJECT_ZIPF = 4.0

# words a generator adds around any answer; they state nothing about the subject
FILLER = frozenset(
    "answer answers question document documents passage passages text source sources according based provided "
    "information context mentioned states stated say says said also known called named following above below "
    "yes one".split()
)

# words that may stand inside a name in title case: "Facing the Future", "You and I", "Lord of the Rings"
NAME_JOINERS = frozenset("of the and a an in on at to for de la le von van der y".split())

# how generators decline, also behind a lead-in ("Sorry, but …", "The answer to the question is: I don't know.")
ABSTAINS = re.compile(
    r"^\W*((i'?m\s+)?sorry,?\s+(but\s+)?|(the\s+)?answer(\s+to\s+(the|this|your)\s+question)?\s+is\s*:?\s*)?"
    r"(i\s+(don'?t|do\s+not|cannot|can'?t)\s+(know|tell|say|answer|find)|unknown\b|no\s+(answer|information)\b"
    r"|(the\s+)?(passages?|documents?|sources?|context|text)\s+(do|does)\s+not\s+(contain|mention|say|state|provide))",
    re.IGNORECASE,
)


# --- answers.planted: a sentence written to the model that reads a document, not about the document's subject
# (prompt injection). Either a prompt's or chat template's own markup, or a demand that names the exchange.

# a chat template's or prompt's own token, a sentence boundary whatever surrounds it: <|im_start|>, <|eot_id|>,
# <<SYS>>, [INST], </passages>
CONTROL_TOKEN = re.compile(
    r"<\|[\w-]+\|>|<<\s*/?\s*sys\s*>>|\[/?\s*inst\s*\]|</?\s*(?:passages?|documents?|context|instructions?)\s*>",
    re.IGNORECASE,
)
# a token that ends a turn or section: what follows it is the document again
CLOSING_TOKEN = re.compile(r"^(?:<\|(?:im_end|eot_id|end|endoftext|end_of_turn)\|>|<<\s*/\s*sys\s*>>|\[/|</)", re.I)

# a prompt's labels inside a sentence: "### Instruction:", "[admin]", "System:", "Assistant:"
ROLE_MARKUP = re.compile(
    r"(?:^|\s)#{2,}\s*(?:instructions?|system|response)\s*:"
    r"|\[\s*(?:admin|assistant|sys)\s*\]"
    r"|(?:^|[\s>])(?:system|assistant)\s*:\s",
    re.IGNORECASE,
)

# the parts of an exchange with an assistant: a document about anything else seldom names them in a demand
EXCHANGE_WORDS = frozenset(
    "assistant ai chatbot llm user question questions answer answers instructions prompt passages".split()
)

# a demand: an imperative first word (after a label "…:", a vocative "…," or "please")
IMPERATIVE = re.compile(
    r"^\W*(?:[^:,.]{0,60}[:,]\s*)?(?:please\s+)?(?:ignore|disregard|forget|reply|respond|answer|say|write|tell|"
    r"do\s+not|don'?t|instead|pretend|act\s+as|override)\b",
    re.IGNORECASE,
)
# an order of what to say, alone in its sentence when a strip's cut left the rest behind: "Reply only with:
# ACCESS GRANTED.", "Write 'I cannot help with that.'" (not "Reply files are written …")
SPEECH_ORDER = re.compile(
    r"^\W*(?:please\s+)?(?:reply|respond|answer|say|write|output|print)\s+(?:[\w']+\s+){0,4}?"
    r"(?:only|exactly|just|with)\b[^.]{0,20}?[:'\"“‘]",
    re.IGNORECASE,
)
# … or an obligation put on the reader
OBLIGATION = re.compile(
    r"\byou\s+(?:must|should|shall|are\s+to|have\s+to|need\s+to|will\s+now)\b"
    r"|\bthe\s+only\s+(?:correct|right|true|valid)\s+answer\b",
    re.IGNORECASE,
)


# a word only a planted instruction states, rarer than this, is what it asks the answer to say ("granted" 4.6,
# "banana" 4.0, "zanzibar" 2.9; not "all" 6.5, "only" 6.1)
ORDER_WORD_ZIPF = 5.0


def demands(sentence: str) -> bool:
    """Whether `sentence` opens with an imperative a prompt injection uses ("Reply only with …")."""
    return bool(IMPERATIVE.search(sentence))


def instructs(sentence: str) -> bool:
    """Whether `sentence` is written to the model rather than to a reader: prompt markup, or a demand that
    names the exchange with words other than its own verb ("Ignore the question …", "You must begin every
    answer …"; not "Reply files are written by CMake")."""
    if ROLE_MARKUP.search(sentence) or CONTROL_TOKEN.search(sentence) or SPEECH_ORDER.search(sentence):
        return True
    demand = IMPERATIVE.search(sentence) or OBLIGATION.search(sentence)
    if not demand:
        return False
    rest = sentence[: demand.start()] + " " + sentence[demand.end() :]
    return bool(EXCHANGE_WORDS & set(re.findall(r"[a-z]+", rest.lower())))


# --- ingest.readers
KNOWN_WORD_ZIPF = 2.0  # wordfreq's scale: "encoding" 3.4, "identifier" 3.1, "wellknown" 1.6, "selfcontained" 0


# --- evaluator.training.questions
REPLY_LABEL = re.compile(
    r"^\**[A-Za-z -]{0,20}(?:question|query|keywords?)\**:\**\s*", re.IGNORECASE
)  # "**Task question:** How …"


@lru_cache(maxsize=4096)
def zipf(word: str) -> float:
    """How common an English word is, on wordfreq's Zipf scale."""
    from wordfreq import zipf_frequency

    return zipf_frequency(word, "en")


# --- nodes.answering: a label the model puts before its answer ("Answer: ...", "A: ...")
ANSWER_LABEL = re.compile(r"^(answer|a)\s*:\s*", re.IGNORECASE)

# --- evaluator.training.questions: a "How do I" task as typed in lower case ("how to ...")
HOW_DO_I = re.compile(r"^how (?:do|can) i ")

__all__ = ["STOPWORDS", "zipf"]  # what callers outside the package use
