"""Which strip would a quote take, by other orders? The quoted answers of a `crag eval run`, replayed.

When the model declines or its draft is withheld, `generate` quotes the best-judged strip that is about
the question and says something (`crag.answers.attribution.quotable`). On the documentation set a third
of CRAG's answerable questions end in a quote, and several quote the wrong strip of the right page. This
reads a run's records and, for each quoted answerable question, looks at the same candidates
`quotable` looks at. It counts how often the strip it picks holds an answer under four orders:

- the shipped order, the strip's judged score;
- retrieval rank (the strip's document, first retrieved first);
- the number of the question's terms the strip states;
- the number of the draft's terms it states (a withheld draft may name the answer; a decline names none).

It also counts how often any candidate holds one: the ceiling of any order. Ties fall back to the
judged score. Nothing is asked of a model: the choice of strip comes after the model's reply, so the
replay is exact for a change of order alone.

    python -m lab.experiments.quote_choice artifacts/eval/models/local-docs-k10 --show
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # answer_rules: a script of lab/benchmarks/

from answer_rules import recorded

from crag.answers.attribution import abstains, concerns, says_something, terms
from crag.evaluation import answer_metrics as metrics
from crag.knowledge.refinement import judged
from crag.records import Strip


def orders(question: str, draft: str) -> dict[str, Callable[[Strip], tuple]]:
    """Each order as a sort key of a strip, the largest picked; ties fall back to the judged score. Web
    strips come after every retrieved document's in retrieval rank."""
    # a decline names nothing: "I don't know" would order strips by whether they say "know"
    asked, drafted = terms(question), set() if abstains(draft) else terms(draft)
    return {
        "judged (shipped)": lambda s: (judged(s),),
        "retrieval rank": lambda s: (-s["doc"] if s["origin"] == "internal" else -99, judged(s)),
        "question's terms": lambda s: (len(asked & terms(s["text"])), judged(s)),
        "draft's terms": lambda s: (len(drafted & terms(s["text"])), judged(s)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a `crag eval run` output folder")
    parser.add_argument("--system", default="crag")
    parser.add_argument("--show", action="store_true", help="print each question where the orders differ")
    args = parser.parse_args()

    _, records = recorded(args.run, args.system)
    quoted = [r for r in records if r["quoted"] and r["answerable"]]
    hits = dict.fromkeys(orders("", ""), 0)
    ceiling = 0
    for r in quoted:
        strips = r["strips"]
        holds = [metrics.contains_answer(f"{s['title']} {s['text']}", r["answers"]) for s in strips]
        about = concerns(r["question"], strips)
        candidates = [i for i, s in enumerate(strips) if about[i] and says_something(r["question"], s)]
        if not candidates:
            continue
        ceiling += any(holds[i] for i in candidates)
        picks = {
            name: max(candidates, key=lambda i: key(strips[i]))
            for name, key in orders(r["question"], r["draft"]).items()
        }
        for name, i in picks.items():
            hits[name] += holds[i]
        if args.show and len({holds[i] for i in picks.values()}) > 1:
            print(f"{r['qid']}: {r['question'][:90]}")
            print(f"   draft: {r['draft'][:100]}")
            print("   " + ", ".join(f"{name} -> {i + 1}{' (answer)' if holds[i] else ''}" for name, i in picks.items()))
    print(f"{len(quoted)} answerable questions quoted, {sum(r['correct'] for r in quoted)} right as run")
    for name, n in hits.items():
        print(f"  {name:18s} picks a strip that holds an answer for {n}")
    print(f"  any candidate holds one for {ceiling}")


if __name__ == "__main__":
    main()
