"""Phrasing augmentation for training: each question also asked in other words.

An evaluator trained on PopQA's one template per relation learns the template, not relevance.
Training therefore pairs each passage with the question in several phrasings: formal and casual,
full questions and search-box keywords, with and without a question mark. These templates are
for training only; the validation slices use a separate set (`lab.datasets.phrasings`) that a test
keeps disjoint from this one.
"""

from __future__ import annotations

import random

TRAINING_TEMPLATES: dict[str, tuple[str, ...]] = {
    "occupation": (
        "What was the job of {s}?",
        "{s} occupation",
        "what is {s}'s line of work",
        "Tell me what {s} worked as.",
    ),
    "place of birth": (
        "Where is {s}'s place of birth?",
        "{s} born where",
        "what city was {s} born in",
        "Name the birthplace of {s}.",
    ),
    "genre": ("Which genre does {s} belong to?", "{s} music style", "{s} is what genre", "Name the genre of {s}."),
    "father": ("Who was the father of {s}?", "{s} dad", "who was {s}'s father", "Name the father of {s}."),
    "mother": ("Who was the mother of {s}?", "{s} mom", "who was {s}'s mother", "Name the mother of {s}."),
    "country": (
        "In which country is {s} located?",
        "{s} located in country",
        "what country is {s} part of",
        "Name the country of {s}.",
    ),
    "producer": (
        "Who was {s} produced by?",
        "{s} produced by",
        "who was the producer for {s}",
        "Name the producer of {s}.",
    ),
    "director": ("Who was {s} directed by?", "{s} directed by", "which director made {s}", "Name the director of {s}."),
    "screenwriter": (
        "Who wrote the screenplay for {s}?",
        "{s} written by",
        "who was {s}'s screenwriter",
        "Name the screenwriter of {s}.",
    ),
    "composer": (
        "Who composed the music of {s}?",
        "{s} music by",
        "who was {s}'s composer",
        "Name the composer of {s}.",
    ),
    "religion": (
        "Which religion did {s} practise?",
        "{s} faith",
        "what was {s}'s religious affiliation",
        "Name the religion of {s}.",
    ),
    "sport": (
        "Which sport does {s} play?",
        "{s} plays what sport",
        "what sport did {s} play",
        "Name the sport of {s}.",
    ),
    "author": (
        "Who wrote the book {s}?",
        "{s} written by author",
        "who is the author of the work {s}",
        "Name the author of {s}.",
    ),
    "capital": (
        "Which city is the capital of {s}?",
        "capital of {s}",
        "what is {s}'s capital",
        "Name the capital of {s}.",
    ),
    "capital of": (
        "Of what is {s} the capital?",
        "{s} is capital of",
        "what place is {s} the capital of",
        "Name what {s} is the capital of.",
    ),
}
BIO_TEMPLATES: tuple[str, ...] = (
    "Who was {s}?",
    "{s}",
    "give me a short biography of {s}",
    "Describe {s}.",
    "who is {s}",
)
GENERIC_TEMPLATES: tuple[str, ...] = ("{s}", "information about {s}")


def training_phrasings(subject: str, relation: str) -> list[str]:
    """Every training phrasing for `relation` ("bio" for biographies) plus the generic ones."""
    templates = BIO_TEMPLATES if relation == "bio" else TRAINING_TEMPLATES.get(relation, ()) + GENERIC_TEMPLATES
    return [template.format(s=subject) for template in templates]


def sample_training_phrasings(subject: str, relation: str, count: int, rng: random.Random) -> list[str]:
    options = training_phrasings(subject, relation)
    return rng.sample(options, min(count, len(options)))
