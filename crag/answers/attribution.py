"""Attribution: which kept strips support each sentence of an answer.

Citing is the code's job, not the generator's: a 135M-parameter model asked to cite writes "[1]"
where the fact belongs, cites the first source whatever it used, or cites nothing. So the model
writes the answer and this module links every answer sentence to the strips that state what the
sentence adds to the question, by lexical overlap: the sentence's content words that the question
does not already contain (its *claim*) must be found in the strip (or its title). "Anna Berg was a
Swedish painter." for "What is Anna Berg's occupation?" claims {swedish, painter}, and only a strip
that says both, or most of them, supports it. A sentence whose claim no strip states gets no
citation, and an answer none of whose sentences is supported is not grounded.

A strip must also be about what the question asks about: it must name the question's subject (by
`subject`: for the model's answers the rarest word the question capitalises, a name; for a quote the
rarest word of any case). "Borysławice is a village in … Gmina Fredropol" states every word it
adds, but the strip it copies is about Borysławka; without this rule such answers to questions the
sources cannot answer were grounded on a strip about a namesake (docs/reports/
2026-11-23-lower-threshold-and-subject-rule.md). A question whose words are all common ("Who is the author of Facing the
Future?") has no rarest word to name it; its capitalised name (`named_phrase`) must then be in the
strip whole, or a strip on "Looking Forward" that says "future" and "author" supports any author.
A strip whose document the question names in full (`named_document`: the
grep manual for "which grep option skips a folder such as node_modules?") is about it too: in a
question about a tool the rarest word is often a detail the manual does not spell ("node_modules",
"unstaged"), and the rule alone withheld right answers copied from the manual.

Two rules measured to change no answer of the 1.5B reader or of SmolLM2 were removed on 2026-11-27
(a number no strip states; a copied title as no claim, which `generate` drops before attributing):
the withholding of unsupported answers already does their work
(docs/reports/2026-11-27-models-side-by-side.md).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from crag.knowledge.refinement import judged, sentence_spans
from crag.knowledge.web_query import STOPWORDS, zipf
from crag.records import Citation, Strip
from crag.text import stem_words, stopwords

SUPPORT_MIN = 0.5  # share of a sentence's claim words a strip must contain to support it
MAX_CITATIONS = 2  # strips cited per sentence: the best supporting ones
# a question's rarest word names its subject when it is at most this common (wordfreq's Zipf scale:
# "Berg" 3.3, "Lovelace" 2.7, "shutil" 0; "father" 5.3 and "country" 5.5 name nothing). 3.5 and
# 4.5 gave the same figures on PopQA; 3.0 let more wrong-subject answers through
SUBJECT_ZIPF = 4.0
# content words a strip must state beyond the question and its title to be quoted: a disambiguation stub
# ("Phil Williams may refer to:") or a list of links ("See Also - npm install - package-lock.json") states
# two or three; every other strip the four held-out sets would quote states five or more (docs/reports/
# 2026-11-25-answer-rests-on-best-strip.md)
QUOTE_MIN_TERMS = 4
# words a generator adds around any answer; they state nothing about the subject
FILLER = frozenset(
    "answer answers question document documents passage passages text source sources according based provided "
    "information context mentioned states stated say says said also known called named following above below "
    "yes one".split()
)
_WORD = re.compile(r"[\w][\w.+-]*\w|\w")
_OPTION = re.compile(r"(?<![\w-])--?[a-z0-9][\w-]*")  # a command-line option, dashes and all (lower-cased text)


def terms(text: str) -> set[str]:
    """Stemmed content words of `text`; dotted and dashed names ("json.dumps", "--max-count") stay whole
    and also count by their parts. A command-line option also counts with its dashes ("-a", "--all"):
    without them it is the stopword "a" or "all", and "The `-a` flag makes ls show hidden files." claimed
    nothing that ls's "-a, --all do not ignore entries starting with ." could support."""
    lowered = text.lower()
    words = []
    for token in _WORD.findall(lowered):
        words += [token] + (re.split(r"[.+-]+", token) if re.search(r"[.+-]", token) else [])
    return _content(words) | set(_OPTION.findall(lowered))


def _content(words: list[str]) -> set[str]:
    """The stemmed words that say something: stopwords, filler and empty parts dropped (stemmed as
    the evaluator's lexical blend stems)."""
    return set(stem_words([w for w in words if w and w not in STOPWORDS and w not in FILLER]))


def _after_title(sentence: str, titles: Sequence[str], glue: str) -> tuple[str, str]:
    """(the longest knowledge title `sentence` starts with (any case) followed by one of the `glue`
    characters, or ""; what follows that character, unstripped)."""
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
    """The model's decline when it copied a knowledge title in front of it, else None. Trying crag on
    npm's documentation, "script that runs only before npm publish" was answered "npm-update - I don't
    know.": no answer, but it did not read as a decline, and the title's word was "supported"."""
    title, rest = _after_title(text, titles, TITLE_GLUE)
    rest = rest.lstrip(TITLE_GLUE)
    return rest if title and rest and abstains(rest) else None


def claim(sentence: str, question: str) -> set[str]:
    """What the sentence says beyond the question."""
    return terms(sentence) - terms(question)


def subject(question: str, names_only: bool = False) -> list[set[str]]:
    """The question's rarest content words (ties all count), each as the terms that may stand for it
    in a strip ("json.dumps" also as "json" and "dumps"); none when even the rarest is a common word.
    Function words count for nothing, however rare their spelling: "whats" (Zipf 3.9) was taken for the
    subject of "show whats the time in los angeles", and no strip could name it.

    `names_only` looks only at the words the question writes with a capital letter: names ("Lovelace",
    "OrderedDict", "Pillow"), not the uncommon words of a task ("stdlib", "unstage", "unmatched"), for
    `attribute` (see `concerns`)."""
    stop = stopwords()
    words = [w for w in _WORD.findall(question) if not names_only or w[:1].isupper()]
    rarity = {w: zipf(w) for w in map(str.lower, words) if w not in STOPWORDS and w not in FILLER and w not in stop}
    if not rarity or min(rarity.values()) >= SUBJECT_ZIPF:
        return []
    rarest = min(rarity.values())
    return [named for w, z in rarity.items() if z == rarest and (named := terms(w))]


def about(named: list[set[str]], stated: set[str]) -> bool:
    """Whether a strip stating `stated` names the question's subject (any one of its rarest words)."""
    return not named or any(words & stated for words in named)


def named_document(question: str, title: str) -> bool:
    """Whether the question names every content word of a strip's document title ("grep", "git-stash"
    for "git stash only staged changes"), so that the strip is about what the question asks about
    whatever its rarest word. A namesake's title has a word the question lacks ("Annika Sörenstam"
    for "Annika Billstam"); an untitled strip names nothing."""
    titled = _content([w for token in _WORD.findall(title.lower()) for w in re.split(r"[._+-]+", token)])
    return bool(titled) and titled <= terms(question)


# words that may stand inside a name in title case: "Facing the Future", "You and I", "Lord of the Rings"
NAME_JOINERS = frozenset("of the and a an in on at to for de la le von van der y".split())
_NAME_TOKEN = re.compile(r"[\w'’.-]+")


def named_phrase(question: str) -> str | None:
    """The longest run of two or more capitalised words in the question, joined by small words, after
    its first word ("Facing the Future" in "Who is the author of Facing the Future?"): the subject of
    a question whose words are all common, which the rarest word cannot name. None without one."""
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
    """Whether `text` holds `phrase` word for word (case, punctuation and spacing aside)."""
    return f" {_words(phrase)} " in f" {_words(text)} "


def concerns(question: str, strips: Sequence[Strip], names_only: bool = False) -> list[bool]:
    """Whether each strip is about what the question asks about: it names the question's subject (its
    rarest word; or, when all its words are common, its `named_phrase` whole), the question names
    the strip's document (`named_document`), or another kept strip of the same document names the
    subject. A manual names its function once: functools' strip on `cache_info()` does not say
    "lru_cache", the strip before it does, and the 1.5B reader's right answer from it was withheld. A
    namesake's page is another document, so the rule's purpose stands.

    `names_only` (for the model's answers, `attribute`) takes the subject from the rarest words the
    question capitalises (`subject`). The rule is there for namesakes, and a namesake is a name: with the
    1.5B reader the rarest word of a documentation question was as often a word of the task that the
    manual does not use ("python stdlib percentile cut points" answered `quantiles`, "make an unmatched
    pattern expand to nothing" `nullglob`), and right answers were withheld (docs/reports/
    2026-11-27-evening-the-subject-is-a-name.md). A quote has no reader's judgement behind it, so
    `quotable` keeps the rarest word, whatever its case, as its test of relevance."""
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
    """What a strip states: the terms of its text and its title (a title names the subject too), and
    every run of digits in them, wherever it stands: Wikipedia's text has "(October 29, 1861November 23,
    1927)", whose year is no word of its own."""
    text = f"{strip['title']} {strip['text']}"
    return terms(text) | set(_DIGITS.findall(text))


def names(strip: Strip) -> set[str]:
    """What a strip names, for the subject rule: what it `states`, and each part of an identifier
    joined by underscores. Documentation names a thing by its identifier: "zip_longest" is what
    itertools says of zipping, and "Zipping two lists of different lengths …" had no strip about its
    subject (zip) to quote. The parts name; they do not support a claim: counted as stated, the
    "extract_dir" of a shutil strip supported "Extracting files from a directory is a bit tricky."
    Only the strip's side is split: a question's "check_output" stays one name, not "output"."""
    parts = [part for name in _SNAKE.findall(f"{strip['title']} {strip['text']}".lower()) for part in name.split("_")]
    return states(strip) | _content(parts)


def support(claimed: set[str], stated: set[str], key: set[str] | None = None) -> float:
    """Share of the claim's `key` terms (its `informative` ones; all of it by default) that a strip
    stating `stated` (its terms, title included) states."""
    if not claimed:
        return 0.0
    key = key or claimed
    return len(key & stated) / len(key)


_CODE = re.compile(rf"`[^`]+`|{_OPTION.pattern}")  # inline code, and command-line options


def informative(sentence: str, claimed: set[str]) -> set[str]:
    """The claim's terms that come from an uncommon word (Zipf below SUBJECT_ZIPF: names, identifiers,
    technical words), or the whole claim when it has none. A model that writes whole sentences wraps
    the answer in common words no strip repeats: "The `shutil.which` function in Python is similar to
    the Unix `which` command, which searches … for a specified executable" claims "similar",
    "specified", "function"; counted like "shutil.which" they withheld the 1.5B reader's right answers."""
    rarity: dict[str, float] = {}
    code = {w for c in _CODE.findall(sentence.lower()) for w in _WORD.findall(c)}  # `-S`, `which`: names, not words
    for token in _WORD.findall(sentence.lower()):
        for word in [token, *(re.split(r"[.+-]+", token) if re.search(r"[.+-]", token) else [])]:
            if word and word not in STOPWORDS and word not in FILLER:
                stem = stem_words([word])[0]
                rarity[stem] = min(rarity.get(stem, SUBJECT_ZIPF), 0.0 if token in code else zipf(word))
    return {term for term in claimed if rarity.get(term, 0.0) < SUBJECT_ZIPF} or claimed


def attribute(answer: str, question: str, strips: Sequence[Strip]) -> list[Citation]:
    """One citation record per sentence of `answer`; `sources` holds 1-based strip numbers. Only
    strips about the question (`concerns`) can be cited. Whether a strip supports a sentence is decided
    on the claim's uncommon words (`informative`); among the strips that state as many of them, those
    that state more of the whole claim are cited. "Henri Becquerel was a French physicist and engineer."
    has one uncommon word, "physicist", which the demo's strips on the becquerel unit and on
    radioactivity state as well as his own page; only his page also says "engineer", and the first two
    strips in order were cited (on the recorded runs: citation precision 71.3% → 73.2% on the
    documentation set, 77.7% → 77.4% on PopQA, no answer changed)."""
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


def quotable(question: str, strips: Sequence[Strip], threshold: float) -> int | None:
    """The 1-based number of the strip to quote when the model's answer cannot be used: the
    best-judged strip (`refinement.judged`) that is about the question (`concerns`) and is judged at
    least `threshold`; None when no strip is.

    A 135M-parameter model often declines or drifts even when a kept strip answers ("--abort" for
    "get my branch back as it was before the rebase"); that strip, word for word, is then a better
    reply than "I don't know", and it cannot be ungrounded. The evaluator's "relevant" (for a strip
    of the retrieved documents, as refinement ranks it: lifted by its standing among the question's
    strips) and the subject rule keep it from quoting whatever was retrieved for a question the
    sources cannot answer (docs/reports/2026-11-23-quoting-instead-of-declining.md). A strip that says next to nothing
    (`says_something`) is not quoted."""
    candidates = [
        (judged(strip), -n, n)
        for (n, strip), relevant in zip(enumerate(strips, 1), concerns(question, strips))
        if relevant and judged(strip) >= threshold and says_something(question, strip)
    ]
    return max(candidates)[2] if candidates else None


def says_something(question: str, strip: Strip) -> bool:
    """Whether a strip states `QUOTE_MIN_TERMS` content words beyond the question and its own title: a
    quote that only names the subject again, or lists links, answers nothing."""
    return len(claim(strip["text"], question) - terms(strip["title"])) >= QUOTE_MIN_TERMS


def grounded(citations: Sequence[Citation]) -> bool:
    return any(c["sources"] for c in citations)


# how generators say that the passages do not answer: "I don't know.", "The passages do not mention …",
# also behind a lead-in: "The answer to the question is: I don't know." (the Rust book's "How do I make a
# variable mutable?", counted as a grounded answer because a strip said "you now know"), "Sorry, but …"
_ABSTAINS = re.compile(
    r"^\W*((i'?m\s+)?sorry,?\s+(but\s+)?|(the\s+)?answer(\s+to\s+(the|this|your)\s+question)?\s+is\s*:?\s*)?"
    r"(i\s+(don'?t|do\s+not|cannot|can'?t)\s+(know|tell|say|answer|find)|unknown\b|no\s+(answer|information)\b"
    r"|(the\s+)?(passages?|documents?|sources?|context|text)\s+(do|does)\s+not\s+(contain|mention|say|state|provide))",
    re.IGNORECASE,
)


LOOP_WORDS, LOOP_TIMES = 4, 3


def loops(draft: str) -> bool:
    """Whether a draft goes round in circles: a run of four words that comes three times or more.

    The 135M-parameter model does this ("Building Node.js: Building Node.js from a tarball URL:
    Building Node.js: …"; 4 of the 144 documentation-set drafts). Each turn of the loop may be
    "supported" by a strip, but the draft is no answer. (The eval harness's `degenerate` counts a
    repeat at two and an echoed question too, a sixth of those drafts: a stricter measure than a rule
    that withholds answers.) A decline is not a loop, however often it says so: it stays the model's
    own "I don't know"."""
    if abstains(draft):
        return False
    # words of an identifier count one by one: "find_package(Gtest_FLEX_FLAG_FLEX_FLEX_FLEX_FLEX…" (CMake's
    # documentation) is a loop inside one \w+ run
    words = re.findall(r"[^\W_]+", draft.lower())
    runs = Counter(tuple(words[i : i + LOOP_WORDS]) for i in range(len(words) - LOOP_WORDS + 1))
    return any(n >= LOOP_TIMES for n in runs.values())


def abstains(answer: str) -> bool:
    """Whether the answer declines to answer (ours, `crag.prompts.ABSTENTIONS`, or the model's own)."""
    return bool(_ABSTAINS.match(answer))


__all__ = ["SUPPORT_MIN", "abstains", "claim", "states", "support"]  # what callers outside the package use
