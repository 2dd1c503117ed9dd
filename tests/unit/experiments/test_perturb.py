"""--shuffle-docs and --noise N (crag/evaluation/perturb.py): the same perturbed list for every system of a run,
random chunks that were not retrieved, recorded in run.json and refused when a resumed run differs."""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from crag.evaluation.perturb import PerturbedRetrieval
from crag.evaluation.runner import run
from crag.settings import Context
from tests.fakes import HARNESS_KB, write_jsonl
from tests.unit.experiments.test_runner import predictions, settings

RETRIEVED = [Document(f"retrieved {i}", metadata={"title": f"r{i}"}) for i in range(5)]
POOL = [Document(f"other {i}", metadata={"title": f"o{i}"}) for i in range(40)] + RETRIEVED


def perturbed(**options) -> PerturbedRetrieval:
    ctx = Context(retriever=RunnableLambda(lambda q: list(RETRIEVED)), k=5)
    return PerturbedRetrieval(ctx, POOL, **options)


def test_noise_replaces_n_documents_with_chunks_that_were_not_retrieved():
    out = perturbed(noise=2, seed=3).invoke("Who?")
    noise = [d for d in out if d.metadata.get("noise")]
    assert len(out) == 5 and len(noise) == 2 and all(d.page_content.startswith("other") for d in noise)
    kept = [d for d in out if not d.metadata.get("noise")]
    assert [d.page_content for d in kept] == [d.page_content for d in RETRIEVED if d in kept]  # order kept
    assert [d.page_content for d in perturbed(noise=2, seed=3).invoke("Who?")] == [d.page_content for d in out]
    assert [d.page_content for d in perturbed(noise=2, seed=3).invoke("Why?")] != [d.page_content for d in out]
    assert len([d for d in perturbed(noise=50).invoke("Who?") if d.metadata.get("noise")]) == 5  # at most k


def test_shuffle_keeps_the_documents_and_changes_their_order():
    orders = {tuple(d.page_content for d in perturbed(shuffle=True, seed=s).invoke("Who?")) for s in range(6)}
    assert all(sorted(o) == sorted(d.page_content for d in RETRIEVED) for o in orders) and len(orders) > 1
    with pytest.raises(ValueError, match="--noise must be at least 0"):
        perturbed(noise=-1)


def test_a_noisy_run_records_it_and_every_system_reads_the_same_documents(inputs, tmp_path, make_context):
    questions, kb, web = inputs
    extra = [{"title": f"Filler {i}", "text": f"Filler page number {i} about nothing in particular."} for i in range(9)]
    write_jsonl(kb, HARNESS_KB + extra)
    out = tmp_path / "run"
    run(settings((questions, kb, web), out, make_context, "rag,crag", noise=1, shuffle_docs=True, seed=1))
    info = json.loads((out / "run.json").read_text())
    assert info["noise"] == 1 and info["shuffle_docs"] is True
    by_system = {}
    for record in predictions(out):
        by_system.setdefault(record["qid"], []).append(record["documents_with_answer"])
    assert all(a == b for a, b in by_system.values())  # rag and crag saw the same list
    assert "of them random chunks" in (out / "report.md").read_text()
    with pytest.raises(ValueError, match="other settings.*noise: 1 -> 2"):
        run(settings((questions, kb, web), out, make_context, "rag", noise=2, shuffle_docs=True, seed=1))
