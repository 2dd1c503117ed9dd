"""The evaluator as a LangChain Runnable: input forms, shared batching, async and thread safety."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.documents import Document

from crag.evaluator.runnable import RetrievalEvaluator, get_scorer

QUESTION = "Who directed the film Heidelberg?"
DOCS = ["The film was directed by Hans Deppe.", "Heidelberg is a city on the Neckar.", "A song about a summer evening."]


@pytest.fixture()
def evaluator(tiny_bert):
    return RetrievalEvaluator(checkpoint=str(tiny_bert), batch_size=8)


def test_invoke_accepts_strings_documents_and_dicts(evaluator):
    as_strings = evaluator.invoke({"question": QUESTION, "documents": DOCS})
    as_documents = evaluator.invoke({"question": QUESTION, "documents": [Document(page_content=d) for d in DOCS]})
    as_dicts = evaluator.invoke({"question": QUESTION, "documents": [{"text": d} for d in DOCS]})
    as_pairs = evaluator.invoke([(QUESTION, d) for d in DOCS])
    assert len(as_strings) == 3 and all(-1 <= s <= 1 for s in as_strings)
    for other in (as_documents, as_dicts, as_pairs):
        assert other == pytest.approx(as_strings, abs=1e-6)


def test_titles_are_ignored_unless_the_checkpoint_uses_them(evaluator):
    plain = evaluator.invoke({"question": QUESTION, "documents": [DOCS[0]]})
    titled = evaluator.invoke(
        {"question": QUESTION, "documents": [Document(page_content=DOCS[0], metadata={"title": "Film"})]}
    )
    assert plain == pytest.approx(titled)


def test_batch_scores_all_inputs_in_shared_forward_passes(evaluator):
    scorer = get_scorer(evaluator.checkpoint)
    inputs = [
        {"question": QUESTION, "documents": DOCS[:2]},
        {"question": "Where is Heidelberg?", "documents": DOCS},
        [(QUESTION, DOCS[2])],
    ]
    before = scorer.forward_passes
    results = evaluator.batch(inputs)
    assert scorer.forward_passes - before == 1  # 6 pairs, batch_size 8
    assert [len(r) for r in results] == [2, 3, 1]
    assert results[0] == pytest.approx(evaluator.invoke(inputs[0]), abs=1e-4)


def test_batch_isolates_a_bad_input_when_asked(evaluator):
    results = evaluator.batch(
        [{"question": QUESTION, "documents": DOCS}, {"question": 7, "documents": DOCS}], return_exceptions=True
    )
    assert len(results[0]) == 3 and isinstance(results[1], TypeError)
    with pytest.raises(TypeError, match="question"):
        evaluator.batch([{"question": QUESTION, "documents": DOCS}, {"question": 7, "documents": DOCS}])


@pytest.mark.parametrize(
    "bad",
    [
        "just a string",
        42,
        {"question": QUESTION, "documents": "not a list"},
        {"question": QUESTION, "documents": [3.5]},
    ],
)
def test_invalid_inputs_raise_type_errors(evaluator, bad):
    with pytest.raises(TypeError):
        evaluator.invoke(bad)


def test_empty_document_list_gives_no_scores(evaluator):
    assert evaluator.invoke({"question": QUESTION, "documents": []}) == []


def test_models_load_once_per_process(tiny_bert):
    first = RetrievalEvaluator(checkpoint=str(tiny_bert)).scorer
    assert RetrievalEvaluator(checkpoint=str(tiny_bert), batch_size=3).scorer is first


def test_async_calls_do_not_block_the_event_loop(evaluator):
    long_docs = [" ".join([d] * 30) for d in DOCS] * 20
    expected = evaluator.invoke({"question": QUESTION, "documents": long_docs})

    async def main():
        ticks = 0
        done = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        results = await asyncio.gather(
            *[evaluator.ainvoke({"question": QUESTION, "documents": long_docs}) for _ in range(4)],
            evaluator.abatch([{"question": QUESTION, "documents": long_docs}] * 2),
        )
        done.set()
        await task
        return ticks, results

    ticks, results = asyncio.run(main())
    assert ticks > 5
    for scores in results[:4]:
        assert scores == pytest.approx(expected, abs=1e-4)
    assert results[4][1] == pytest.approx(expected, abs=1e-4)


def test_concurrent_threads_share_one_model_safely(evaluator):
    inputs = [{"question": f"{QUESTION} {i}", "documents": DOCS} for i in range(16)]
    sequential = [evaluator.invoke(x) for x in inputs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(evaluator.invoke, inputs))
    for a, b in zip(sequential, concurrent):
        assert a == pytest.approx(b, abs=1e-4)


def test_labels_follow_the_checkpoint_thresholds(evaluator):
    upper, lower = evaluator.thresholds.upper, evaluator.thresholds.lower
    assert evaluator.label([upper, (upper + lower) / 2, lower - 0.01]) == ["correct", "ambiguous", "incorrect"]
