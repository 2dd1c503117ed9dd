"""Everyday phrasings of the validation questions: templates kept for validation only.

PopQA asks every relation with one template ("What is X's occupation?"), and an evaluator trained
on it learned that template: on "Who was Ada Lovelace?" it scored the right page −0.82. People
ask the same things in many ways: lower case, no question mark, search-box keywords, a casual
"dad" for "father". These templates are how the validation slices ask them.

They are never used in training. The training recipe has its own, different templates
(`lab.evaluator.phrasings`), and a test checks that the two sets share no template, so a
gain on these phrasings is a gain on phrasings the model has not seen.
"""

from __future__ import annotations

import random

# PopQA relation → templates with `{s}`, the question's subject as PopQA names it
VALIDATION_TEMPLATES: dict[str, tuple[str, ...]] = {
    "occupation": ("what does {s} do for a living", "{s} profession", "What kind of work did {s} do?"),
    "place of birth": ("where was {s} born", "{s} birthplace", "Which town does {s} come from originally?"),
    "genre": ("what kind of genre is {s}", "{s} genre", "How would you classify {s}, style-wise?"),
    "father": ("who is {s}'s dad", "{s} father", "Whose son or daughter is {s}?"),
    "mother": ("who is {s}'s mom", "{s} mother", "Who gave birth to {s}?"),
    "country": ("which country is {s} in", "{s} country", "{s} is located in what nation?"),
    "producer": ("who produced {s}", "{s} producer", "Which person was behind the production of {s}?"),
    "director": ("who directed {s}", "{s} director", "Who was behind the camera as director on {s}?"),
    "screenwriter": ("who wrote the script for {s}", "{s} screenplay", "Who penned the screenplay of {s}?"),
    "composer": ("who wrote the music for {s}", "{s} composer", "Who created the score of {s}?"),
    "religion": ("what faith did {s} follow", "{s} religion", "Which church or faith did {s} belong to?"),
    "sport": ("what sport is {s} involved in", "{s} sport", "Which game does {s} compete in?"),
    "author": ("who wrote {s}", "{s} author", "Who is the writer behind {s}?"),
    "capital": ("what's the capital city of {s}", "{s} capital", "Where is the seat of government of {s}?"),
    "capital of": ("{s} is the capital of which place", "{s} capital of", "What region has {s} as its capital?"),
}
# "Who is X?" biographies (CRAG's Bio task), asked as people do
BIO_TEMPLATES: tuple[str, ...] = ("tell me about {s}", "{s} biography", "What is {s} known for?")


def validation_phrasings(subject: str, relation: str) -> list[str]:
    """Every validation phrasing of a question about `subject`; KeyError for an unknown relation."""
    templates = BIO_TEMPLATES if relation == "bio" else VALIDATION_TEMPLATES[relation]
    return [template.format(s=subject) for template in templates]


def sample_phrasings(subject: str, relation: str, count: int, rng: random.Random) -> list[str]:
    """`count` distinct validation phrasings (all of them when there are fewer)."""
    options = validation_phrasings(subject, relation)
    return rng.sample(options, min(count, len(options)))
