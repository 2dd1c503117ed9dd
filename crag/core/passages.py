"""How a passage carries its title wherever text is scored or shown: "Title: text".

Training pairs, the evaluator's scoring, fetched web paragraphs and the generator's knowledge all
write it this way (as CRAG's page loader does); a model trained on one form and scored on another
loses accuracy, so the form is written once, here.
"""

from __future__ import annotations


def titled(text: str, title: str | None) -> str:
    """`text` prefixed with "`title`: " when there is a title."""
    return f"{title}: {text}" if title else text
