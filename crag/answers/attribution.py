"""Attribution: which kept strips support each sentence of an answer (a small model cites badly).
A sentence is linked by lexical overlap to the strips about the question's subject that state its *claim*,
the content words the question lacks ("Anna Berg was a Swedish painter." claims {swedish, painter})."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from crag.answers.planted import heard, planted
from crag.english import ABSTAINS, FILLER, NAME_JOINERS, ORDER_WORD_ZIPF, STOPWORDS, SUBJECT_ZIPF, zipf
from crag.knowledge.refinement import judged, sentence_spans
from crag.records import Citation, Strip
from crag.text import stem_words, stopwords

SUPPORT_MIN = 0.5  # share of a sentence's claim words a strip must contain to support it
MAX_CITATIONS = 2  # strips cited per sentence: the best supporting ones
# content words a strip must state beyond the question and its title to be quoted (a stub states fewer)
QUOTE_MIN_TERMS = 4
_WORD = re.compile(r"[\w][\w.+-]*\w|\w")
_OPTION = re.compile(r"(?<![\w-])--?[a-z0-9][\w-]*")  # a command-line option, dashes and all (lower-cased text)


def terms(text: str) -> set[str]:
    """Stemmed content words of `text`; dotted and dashed names ("json.dumps") count whole and by their parts,
    options also with their dashes, or "-a" would be the stopword "a"."""
    lowered = text.lower()
    words = []
    for token in _WORD.findall(lowered):
        words += [token] + (re.split(r"[.+-]+", token) if re.search(r"[.+-]", token) else [])
    return _content(words) | set(_OPTION.findall(lowered))


def _content(words: list[str]) -> set[str]:
    return set(stem_words([w for w in words if w and w not in STOPWORDS and w not in FILLER]))


def _after_title(sentence: str, titles: Sequence[str], glue: str) -> tuple[str, str]:
    """(the longest title `sentence` starts with, followed by a `glue` character, or ""; what follows)."""
    for title in sorted({t for t in titles if t}, key=len, reverse=True):
        after = sentence[len(title) : len(title) + 1]
        if after and after in glue and sentence[: len(title)].lower() == title.lower():
            return title, sentence[len(title) + 1 :]
    return "", sentence


def split_echo(sentence: str, titles: Sequence[str]) -> tuple[str, str]:
    """(the knowledge title `sentence` starts with, as "title:", or ""; the rest of the sentence)."""
    title, rest = _after_title(sentence, titles, ":")
    return (title, rest.lstrip()) if title else ("", sentence)


TITLE_GLUE = " :-\u2013\u2014"  # what the model puts between a copied title and its words


def declined_behind_title(text: str, titles: Sequence[str]) -> str | None:
    """The model's decline behind a knowledge title ("npm-update - I don't know."), else None."""
    title, rest = _after_title(text, titles, TITLE_GLUE)
    rest = rest.lstrip(TITLE_GLUE)
    return rest if title and rest and abstains(rest) else None


def claim(sentence: str, question: str) -> set[str]:
    return terms(sentence) - terms(question)


def subject(question: str, names_only: bool = False) -> list[set[str]]:
    """The question's rarest content words (ties all count) as terms; none when even the rarest is common.
    `names_only` looks only at capitalised words."""
    stop = stopwords()
    words = [w for w in _WORD.findall(question) if not names_only or w[:1].isupper()]
    rarity = {w: zipf(w) for w in map(str.lower, words) if w not in STOPWORDS and w not in FILLER and w not in stop}
    if not rarity or min(rarity.values()) >= SUBJECT_ZIPF:
        return []
    rarest = min(rarity.values())
    return [named for w, z in rarity.items() if z == rarest and (named := terms(w))]


def about(named: list[set[str]], stated: set[str]) -> bool:
    return not named or any(words & stated for words in named)


def named_document(question: str, title: str) -> bool:
    """Whether the question names every content word of the strip's (non-empty) document title."""
    titled = _content([w for token in _WORD.findall(title.lower()) for w in re.split(r"[._+-]+", token)])
    return bool(titled) and titled <= terms(question)


_NAME_TOKEN = re.compile(r"[\w'’.-]+")


def named_phrase(question: str) -> str | None:
    """The longest run of two or more capitalised words after the first, small words between ("Facing the
    Future"): the subject of a question whose words are all common. None without one."""
    tokens = _NAME_TOKEN.findall(question)[1:]  # the first word is capitalised as a sentence's
    best: list[str] = []
    run: list[str] = []
    for token in [*tokens, ""]:
        if token[:1].isupper() or (run and token.lower() in NAME_JOINERS):
            run.append(token)
            continue
        while run and not run[-1][:1].isupper():  # a name does not end with "of the"
            run.pop()
        if sum(t[:1].isupper() for t in run) >= 2 and len(run) > len(best):
            best = run
        run = []
    # the question's own possessive is not part of the name: "George Lewis's occupation"
    return re.sub(r"(['’]s|['’])$", "", " ".join(best)) or None


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _says(text: str, phrase: str) -> bool:
    return f" {_words(phrase)} " in f" {_words(text)} "


def concerns(question: str, strips: Sequence[Strip], names_only: bool = False) -> list[bool]:
    """Whether each strip is about the question: it names the `subject` (else the `named_phrase`), the
    question names its document, or another strip of its document names the subject."""
    named = subject(question, names_only)
    phrase = None if named else named_phrase(question)
    own = [
        (about(named, names(strip)) and (phrase is None or _says(f"{strip['title']} {strip['text']}", phrase)))
        or named_document(question, strip["title"])
        for strip in strips
    ]
    documents = {_document(strip) for strip, ok in zip(strips, own) if ok}
    return [ok or _document(strip) in documents for strip, ok in zip(strips, own)]


def _document(strip: Strip) -> tuple[str, str]:
    return strip.get("origin", ""), strip.get("source", "")


_DIGITS = re.compile(r"\d+")
_SNAKE = re.compile(r"[^\W_]+(?:_[^\W_]+)+")  # an identifier of words joined by underscores


def states(strip: Strip) -> set[str]:
    """The terms of a strip's title and text, and every run of digits, even one glued to a word."""
    text = f"{strip['title']} {strip['text']}"
    return terms(text) | set(_DIGITS.findall(text))


def names(strip: Strip) -> set[str]:
    """What a strip `states`, plus the parts of underscore identifiers ("zip_longest" names zip)."""
    parts = [part for name in _SNAKE.findall(f"{strip['title']} {strip['text']}".lower()) for part in name.split("_")]
    return states(strip) | _content(parts)


def support(claimed: set[str], stated: set[str], key: set[str] | None = None) -> float:
    """Share of the claim's `key` terms (all of it by default) in `stated`."""
    if not claimed:
        return 0.0
    key = key or claimed
    return len(key & stated) / len(key)


_CODE = re.compile(rf"`[^`]+`|{_OPTION.pattern}")  # inline code, and command-line options


def informative(sentence: str, claimed: set[str]) -> set[str]:
    """The claim's terms from uncommon words, else the whole claim: a model wraps the answer in common words."""
    rarity: dict[str, float] = {}
    code = {w for c in _CODE.findall(sentence.lower()) for w in _WORD.findall(c)}  # `-S`, `which`: names, not words
    for token in _WORD.findall(sentence.lower()):
        for word in [token, *(re.split(r"[.+-]+", token) if re.search(r"[.+-]", token) else [])]:
            if word and word not in STOPWORDS and word not in FILLER:
                stem = stem_words([word])[0]
                rarity[stem] = min(rarity.get(stem, SUBJECT_ZIPF), 0.0 if token in code else zipf(word))
    return {term for term in claimed if rarity.get(term, 0.0) < SUBJECT_ZIPF} or claimed


def attribute(answer: str, question: str, strips: Sequence[Strip]) -> list[Citation]:
    """One citation per sentence of `answer`, its `sources` 1-based numbers of strips about the question
    that best state the claim's `informative` terms (ties: more of the whole claim). A sentence planted in a
    strip supports nothing (`crag.answers.planted`)."""
    strips = [heard(strip) for strip in strips]
    stated = [states(strip) for strip in strips]
    relevant = concerns(question, strips, names_only=True)
    citations: list[Citation] = []
    for sentence, start, end in sentence_spans(answer):
        claimed = claim(sentence, question)
        key = informative(sentence, claimed)
        scored = [
            ((support(claimed, words, key), support(claimed, words)), n)
            for n, words in enumerate(stated, 1)
            if relevant[n - 1]
        ]
        best = max((s for s, _ in scored), default=(0.0, 0.0))
        cited = [] if best[0] < SUPPORT_MIN else sorted(n for s, n in scored if s == best)[:MAX_CITATIONS]
        citations.append(Citation(sentence=sentence, start=start, end=end, sources=cited))
    return citations


def obeys(answer: str, question: str, strips: Sequence[Strip]) -> bool:
    """Whether a sentence of `answer` says what sentences planted in `strips` say rather than what is left of
    them (`heard`): its claim better supported by the planted sentences than by any strip, or holding an
    uncommon word that only they state ("granted", "banana"). The answer guard beside `attribute`, which
    reads no planted sentence as support; False when nothing is planted."""
    orders = " ".join(filter(None, (planted(strip) for strip in strips)))
    if not orders:
        return False
    ordered = terms(orders)
    evidence = [states(heard(strip)) for strip in strips]
    stated = terms(question).union(*evidence)
    payload = {
        stem
        for word in _WORD.findall(orders.lower())
        if zipf(word) < ORDER_WORD_ZIPF and (stem := stem_words([word])[0]) in ordered - stated
    }
    for sentence, _, _ in sentence_spans(answer):
        claimed = claim(sentence, question)
        if claimed & payload or support(claimed, ordered) > max((support(claimed, e) for e in evidence), default=0):
            return True
    return False


def quotable(question: str, strips: Sequence[Strip], threshold: float) -> int | None:
    """The 1-based number of the best-judged strip about the question, judged at least `threshold`, that
    `says_something`, to quote when the model's answer cannot be used; None when none is. The strips are read
    `heard`, as for an answer: what is left of one after its planted sentences is what may be quoted."""
    strips = [heard(strip) for strip in strips]
    candidates = [
        (judged(strip), -n, n)
        for (n, strip), relevant in zip(enumerate(strips, 1), concerns(question, strips))
        if relevant and judged(strip) >= threshold and says_something(question, strip)
    ]
    return max(candidates)[2] if candidates else None


def says_something(question: str, strip: Strip) -> bool:
    """Whether a strip states `QUOTE_MIN_TERMS` content words beyond the question and its own title."""
    return len(claim(strip["text"], question) - terms(strip["title"])) >= QUOTE_MIN_TERMS


def grounded(citations: Sequence[Citation]) -> bool:
    return any(c["sources"] for c in citations)


LOOP_WORDS, LOOP_TIMES = 4, 3


def loops(draft: str) -> bool:
    """Whether a draft goes round in circles: four words that come three times or more (never a decline)."""
    if abstains(draft):
        return False
    # words of an identifier count one by one: a loop can sit inside one \w+ run ("FLAG_FLEX_FLEX_FLEX…")
    words = re.findall(r"[^\W_]+", draft.lower())
    runs = Counter(tuple(words[i : i + LOOP_WORDS]) for i in range(len(words) - LOOP_WORDS + 1))
    return any(n >= LOOP_TIMES for n in runs.values())


def abstains(answer: str) -> bool:
    """Whether the answer declines (ours, the `crag.prompts` *_ANSWER texts, or the model's own)."""
    return bool(ABSTAINS.match(answer))


__all__ = ["SUPPORT_MIN", "abstains", "claim", "states", "support"]  # what callers outside the package use
