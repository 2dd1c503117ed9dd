"""Follow-up questions on a thread: detect them and make them self-contained ("When was she born?" →
"When was Ada Lovelace born?"), by the chat model's rewrite when usable, else by these rules."""

from __future__ import annotations

import re
from collections.abc import Sequence

from crag.answers.attribution import abstains
from crag.english import (
    ASKED_THING,
    AUXILIARIES,
    DEMONSTRATIVE,
    DEMONYM,
    ELLIPSIS,
    PERSON_NOUNS,
    POSSESSIVE,
    PRONOUN_KIND,
    PRONOUN_SUBJECT,
    REFERS_BACK,
    SENTENCE_WORD_ZIPF,
    STOPWORDS,
    SUBJECT,
    TOPIC_FIRST,
    zipf,
)
from crag.knowledge.web_query import content_words, names, subjects
from crag.questions.pronouns import looks_like_person, shielded, unshield
from crag.records import Turn

HISTORY_TURNS = 3  # turns shown to the rewriter
ANSWER_CHARS = 200


def refers_back(question: str) -> bool:
    """Whether `question` has a referring word that does not refer inside the question itself."""
    return bool(REFERS_BACK.search(shielded(question)[0]))


def format_history(history: Sequence[Turn]) -> str:
    lines = []
    for turn in list(history)[-HISTORY_TURNS:]:
        answer = re.sub(r"\s*\[\d+\]", "", turn["answer"])[:ANSWER_CHARS]
        lines.append(f"Q: {turn['question']}\nA: {answer}")
    return "\n".join(lines)


def parse_condensed(reply: str, question: str) -> str | None:
    """The model's rewrite if it no longer refers back and keeps half the follow-up's words, else None; a
    question given back unchanged is kept when it names something."""
    line = next((ln.strip() for ln in reply.splitlines() if ln.strip()), "")
    line = re.sub(r"^(rewritten( question)?|question|q)\s*:\s*", "", line, flags=re.IGNORECASE).strip().strip("\"'“”")
    if plain_question(line) == plain_question(question):
        return question if names(question) else None
    if len(line) < 3 or len(line) > 3 * len(question) + 100 or refers_back(line):
        return None
    own = content_words(question)
    if own and len(own & content_words(line)) < len(own) / 2:
        return None
    return line


def plain_question(text: str) -> str:
    """A question lower-cased, single-spaced, without final punctuation, to compare two spellings."""
    return re.sub(r"[?.!\s]+$", "", " ".join(text.split())).lower()


def main_entity(text: str) -> str | None:
    found = names(text)
    return max(found, key=len) if found else None


def _asked_thing(question: str, follow_up: str) -> list[str]:
    """The noun phrase `question` asks about, as a referent: "a closure" in "What is a closure in Rust?"."""
    found = ASKED_THING.match(question)
    if not found or re.match(r"\s+of\b", question[found.end() :]):
        return []
    if not found.group("what") and PRONOUN_SUBJECT.match(follow_up):
        return []
    return [found.group("np").rstrip(".?!:")]


def _candidates(turn: Turn, follow_up: str = "") -> tuple[list[str], list[str], str]:
    """(what the previous question is about, the names its answer gives, what it asked for: "who", "where",
    "entity" for "Which …"/"What band …", else its first word)."""
    question = turn["question"]
    answer = re.sub(r"\s*\[\d+\]", "", turn.get("answer") or "")
    about = _phrases(question, "" if abstains(answer) else answer)

    def span(phrase: str) -> set[int]:
        at = question.find(phrase)
        return set(range(at, at + len(phrase))) if at >= 0 else set()

    # a subject inside the phrase is what it is about ("the University" of "the University of Tokyo")
    thing = [np for np in _asked_thing(question, follow_up) if not any(span(np) & span(a) for a in about)]
    about = sorted(about + thing, key=lambda phrase: min(span(phrase), default=len(question)))
    given = [] if abstains(answer) else [n for n in names(answer) if _names_a_referent(n, answer, about)]
    words = re.findall(r"\w+", question.lower())
    wh = words[0] if words else ""
    if wh == "how":  # an answer to a how-question starts with a verb: "Run git revert." names no "Run"
        given = [n for n in given if not _instruction_verb(n, answer)]
    if wh == "which" or (wh == "what" and len(words) > 1 and words[1] not in AUXILIARIES):
        wh = "entity"
    return about, given, wh


_TOKEN = re.compile(r"[\w][\w.+/-]*\w|\w")
_SPOKEN_WORD = re.compile(r"[\w.+/-]+")
PHRASE_STOPS = STOPWORDS | AUXILIARIES  # words a subject's phrase does not run on into ("npm ci do")


def _phrases(question: str, answer: str) -> list[str]:
    """The question's `subjects` as the phrases a pronoun stands for: a subject takes in the words after it
    while the answer says the longer phrase ("npm ci", not "npm")."""
    found = subjects(question)
    said = _spoken(answer)
    phrases: list[str] = []
    end = -1  # where the last phrase ends in `question`
    for term in found:
        at = question.find(term)
        if at < 0:
            phrases.append(term)
            continue
        if at < end:  # taken in by the phrase before it
            continue
        stop = at + len(term)
        for token in _TOKEN.finditer(question, stop):
            if question[stop : token.start()].strip() or token.group(0).lower() in PHRASE_STOPS:
                break
            if _spoken(question[at : token.end()]) not in said:
                break
            stop = token.end()
        phrases.append(question[at:stop])
        end = stop
    return phrases


def _spoken(text: str) -> str:
    return " " + " ".join(_SPOKEN_WORD.findall(text.lower())) + " "


def _instruction_verb(name: str, answer: str) -> bool:
    """Whether a "name" is an answer's common first word, an instruction ("Run git revert.")."""
    return (
        " " not in name
        and zipf(name.lower()) >= SENTENCE_WORD_ZIPF
        and bool(re.match(rf"\W*{re.escape(name)}\b", answer))
    )


def _names_a_referent(name: str, answer: str, about: list[str]) -> bool:
    """A name in the answer is a new referent unless the question had it or it describes ("a Swedish painter")."""
    if any(name.lower() in a.lower() for a in about):
        return False
    return not (DEMONYM.fullmatch(name) and re.search(rf"\b{re.escape(name)}\s+[a-z]", answer))


def referent(kind: str, history: Sequence[Turn], follow_up: str = "") -> str | None:
    """What a pronoun of `kind` (person, thing, group, place) refers to: after "Who is the author of
    FastAPI?", "he" is the person the answer names and "it" is FastAPI."""
    if not history:
        return None
    about, given, wh = _candidates(history[-1], follow_up)
    people = [n for n in about if looks_like_person(n)]
    # in question order: the first is the question's grammatical subject more often than the longest
    # ("Does npm change package.json?" … "it" is npm)
    things = [n for n in about if not looks_like_person(n)]
    given_people = [n for n in given if looks_like_person(n)]
    if kind == "person":
        if wh == "who" and given and not people:  # "Who wrote Hamlet?" asked for a person: the answer names them
            return (given_people or given)[0]
        return next(iter(people + given_people), None)
    if kind == "thing":
        return next(iter(things + [n for n in given if not looks_like_person(n)]), None)
    if kind == "place":
        if wh == "where" and given and not things:  # "Where was Ada Lovelace born?" – "London."
            return given[0]
        return next(iter(things + people), None)
    if wh in ("who", "entity") and given:  # "Who founded Microsoft?", "What band recorded Abbey Road?"
        return " and ".join(given_people[:2]) if len(given_people) > 1 else given[0]
    return next(iter(sorted(about, key=len, reverse=True) + given), None)


def resolve(question: str, history: Sequence[Turn]) -> str | None:
    """The rule-based rewrite (each pronoun replaced by its `referent`), or None when nothing is substituted."""
    if not history:
        return None
    topic = TOPIC_FIRST.match(question)
    if topic:  # "What about npm install, does it …?": its pronouns are the topic it names
        named, rest = topic.group("entity").strip(), topic.group("rest")
        text = re.sub(rf"\b({POSSESSIVE})\b(?=\s+[A-Za-z])", lambda m: f"{named}'s", rest, flags=re.IGNORECASE)
        text = re.sub(rf"\b({SUBJECT.replace('|there', '')})\b", lambda m: named, text, flags=re.IGNORECASE)
        if text != rest:
            return text[:1].upper() + text[1:]
    previous = history[-1]["question"]
    entity = main_entity(previous)
    ellipsis = ELLIPSIS.match(question)
    if ellipsis:  # its name swapped; with no name, its first subject ("How do I install certifi?" … "and httpx?")
        new = ellipsis.group("entity").strip()
        asked = previous.replace(entity, new) if entity and entity in previous else _asked_about(new, history[-1])
        return asked if asked != question else None
    text, kept = shielded(question)

    def substitute(match: re.Match, form: str) -> str:
        found = referent(PRONOUN_KIND[match.group(0).lower()], history, question)
        if found is None:
            return match.group(0)
        return {"possessive": f"{found}'s", "place": f"in {found}"}.get(form, found)

    text = re.sub(
        rf"\b({POSSESSIVE})\b(?=\s+[A-Za-z])", lambda m: substitute(m, "possessive"), text, flags=re.IGNORECASE
    )
    text = re.sub(r"\bthere\b", lambda m: substitute(m, "place"), text)
    text = re.sub(
        rf"\b({SUBJECT.replace('|there', '')}|{POSSESSIVE})\b",
        lambda m: substitute(m, "name"),
        text,
        flags=re.IGNORECASE,
    )

    def demonstrative(match: re.Match) -> str:
        noun = (match.group("noun") or "").lower()
        return referent("person" if noun in PERSON_NOUNS else "thing", history, question) or match.group(0)

    text = DEMONSTRATIVE.sub(demonstrative, text)
    if _still_refers(text):
        return None
    text = unshield(text, kept)
    return text if text != question else None


def _asked_about(new: str, turn: Turn) -> str | None:
    """The previous question asked about `new` instead of its first subject (a subcommand for a
    subcommand: "npm install", not "npm install ci"); None when it has no subject."""
    about, _, _ = _candidates(turn)
    question = turn["question"]
    old = about[0] if about else ""
    at = question.find(old) if old else -1
    if at < 0:
        return None
    words = new.split()
    if len(words) > 1 and words[0].lower() == old.lower():  # as many words as the new one has
        old = " ".join(question[at:].split()[: len(words)]).rstrip("?.!,")
    return question[:at] + new + question[at + len(old) :]


def _still_refers(text: str) -> bool:
    return bool(re.search(rf"\b({SUBJECT}|{POSSESSIVE})\b", text, re.IGNORECASE) or DEMONSTRATIVE.search(text))


def append_previous(question: str, history: Sequence[Turn]) -> str:
    return f"{question} ({history[-1]['question']})" if history else question


__all__ = ["append_previous", "plain_question", "refers_back", "resolve"]  # what callers outside the package use
