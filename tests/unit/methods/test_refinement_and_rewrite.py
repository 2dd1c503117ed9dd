"""Decompose-then-recompose, query rewriting and answer citations, with a fake evaluator."""

from __future__ import annotations

from itertools import combinations, pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crag.knowledge.refinement import (
    cosines,
    decompose,
    distinct,
    judged,
    refine,
    repeats,
    sentence_spans,
    set_adjusted,
    standings_of,
    wording,
)
from crag.knowledge.routing import final_knowledge
from crag.knowledge.web_query import fallback_query, parse_query, subjects
from crag.passages import passage
from crag.settings import Context
from tests.fakes import FakeEvaluator, WordEmbeddings

LONG = " ".join(f"w{i}" for i in range(125))

WEIGHT = Context.default("strip_set_weight")  # refinement as the graph ranks strips


def test_fixed_num_uses_50_word_windows_and_merges_a_short_tail():
    strips = decompose(LONG, "fixed_num")
    assert [len(s.split()) for s in strips] == [50, 50, 25]  # a tail of 10+ words stays a strip
    assert decompose(" ".join(["w"] * 105), "fixed_num") == [" ".join(["w"] * 50), " ".join(["w"] * 55)]


def test_excerption_groups_sentences_by_three():
    text = "Dr. Smith was born in St. Louis. He moved in 1990. He painted. He sang. He died."
    assert decompose(text, "excerption") == [
        "Dr. Smith was born in St. Louis. He moved in 1990. He painted.",
        "He sang. He died.",
    ]


def test_a_sentence_ends_only_where_the_text_has_a_space():
    # pysbd cuts at the dot of a dotfile or a method call; the pieces are one sentence, kept as written
    text = "A `.npmrc` file in the root sets values. Edit ~/.bashrc first. Call JSONEncoder().encode(x) once."
    assert decompose(text, "excerption") == [text]
    assert [s for s, _, _ in sentence_spans(text)] == [
        "A `.npmrc` file in the root sets values.",
        "Edit ~/.bashrc first.",
        "Call JSONEncoder().encode(x) once.",
    ]


def test_selection_keeps_whole_passages_and_unknown_modes_fail():
    assert decompose("  A   whole passage.  ", "selection") == ["A whole passage."]
    assert decompose("", "excerption") == []
    with pytest.raises(ValueError, match="unknown refinement mode"):
        decompose("text", "paragraphs")  # type: ignore[arg-type]


def test_refine_keeps_top_k_above_threshold_in_document_order_with_one_call():
    passages = [
        passage("Anna painted seascapes all her life. She loved boats. Then she moved away.", "Anna", "a.txt"),
        passage("Carl kicked balls for money and fame. Anna painted harbours at dawn every day.", "Carl", "c.txt"),
    ]
    evaluator = FakeEvaluator({"seascapes": 0.9, "harbours": 0.8, "boats": -0.6}, default=-0.2)
    strips = refine(
        "What did Anna paint?", passages, evaluator, mode="excerption", top_k=5, threshold=-0.5, origin="internal"
    )
    assert len(evaluator.calls) == 1
    assert [s["doc"] for s in strips] == sorted(s["doc"] for s in strips)
    assert all(s["score"] >= -0.5 for s in strips)
    fixed = refine(
        "q",
        passages,
        FakeEvaluator({"seascapes": 0.9, "harbours": 0.8}, default=-0.2),
        mode="selection",
        top_k=1,
        threshold=-0.5,
        origin="external",
    )
    assert [(s["title"], s["source"], s["origin"]) for s in fixed] == [("Anna", "a.txt", "external")]


def test_refine_keeps_no_strip_that_repeats_a_better_one_and_gives_its_slot_to_the_next():
    # Node.js's pages give each example twice, as CommonJS and as an ES module
    body = "const input = 'hello world'; const compressed = zlib.gzipSync(input); console.log(compressed.length);"
    cjs = f"const zlib = require('node:zlib'); {body} Compressing a buffer at once blocks the event loop."
    mjs = f"import zlib from 'node:zlib'; {body} Compressing a buffer at once blocks the event loop."
    other = "zlib.deflateSync(buffer) compresses a buffer with Deflate instead of gzip, also synchronously."
    passages = [passage(cjs, "Zlib", "z.md"), passage(mjs, "Zlib", "z.md"), passage(other, "Zlib", "z.md")]
    evaluator = FakeEvaluator({"require": 0.9, "import": 0.85, "Deflate": 0.3}, default=-0.9)
    strips = refine(
        "gzip a buffer synchronously", passages, evaluator, mode="selection", top_k=2, threshold=-0.5, origin="internal"
    )
    assert [s["doc"] for s in strips] == [0, 2]  # the better of the two, then the next distinct strip


@given(
    st.lists(
        st.sampled_from(["gzip a buffer now", "gzip the buffer now", "deflate a stream later", "1 2 3", "..."]),
        max_size=8,
    ),
    st.integers(0, 9),
)
def test_distinct_keeps_the_first_of_each_repeat_in_order_up_to_the_limit(texts, limit):
    order = list(range(len(texts)))[::-1]
    found = distinct(texts, order, limit)
    assert len(found) <= limit and found == [i for i in order if i in found]  # a subsequence of the order
    assert not any(repeats(wording(texts[i]), wording(texts[j])) for i, j in combinations(found, 2))
    skipped = [i for i in order[: order.index(found[-1]) + 1] if i not in found] if found else []
    assert all(any(repeats(wording(texts[i]), wording(texts[j])) for j in found) for i in skipped)


def test_refine_drops_strips_under_four_words_and_everything_below_threshold():
    evaluator = FakeEvaluator({}, default=-0.9)
    assert (
        refine(
            "q",
            [passage("Too short."), passage("This one is long enough to score.")],
            evaluator,
            mode="selection",
            top_k=5,
            threshold=-0.5,
            origin="internal",
        )
        == []
    )
    assert evaluator.calls == [["This one is long enough to score."]]


@pytest.mark.parametrize(
    "output, keywords",
    [
        ("Henry Feilden, occupation", ["Henry Feilden", "occupation"]),
        ("query: city, Billy Carlson, born\nquestion: next", ["city", "Billy Carlson", "born"]),
        ('"religion of John Gwynn".', ["religion of John Gwynn"]),
        ("a, b, c, d", ["a", "b", "c"]),
    ],
)
def test_rewrites_are_parsed_into_at_most_three_keywords(output, keywords):
    assert parse_query(output).keywords == keywords


@pytest.mark.parametrize("output", ["", "???", "query:", "one two three four five six seven eight nine ten eleven"])
def test_unusable_rewrites_are_rejected(output):
    assert parse_query(output) is None


def test_keywords_unrelated_to_the_question_are_dropped():
    assert parse_query("The answer to the question is", "Who was Henri Becquerel?") is None


@pytest.mark.parametrize(
    "output",
    [
        "Henry Feilden, occupation",  # the few-shot example leaking
        "The occupation of Henry Feilden is a mystery",
        "occupation",  # lost the subject
    ],
)
def test_rewrites_must_keep_the_question_s_subject(output):
    assert parse_query(output, "What is Anna Berg's occupation?") is None
    assert parse_query("Anna Berg, occupation", "What is Anna Berg's occupation?").keywords == [
        "Anna Berg",
        "occupation",
    ]
    assert parse_query("occupation, painter", "what is the occupation of a painter?").keywords == [
        "occupation",
        "painter",
    ]


@pytest.mark.parametrize(
    "question, subjects_",
    [
        ("How do I get the CA bundle path from certifi?", ["CA", "certifi"]),  # a lowercase package name
        ("How do I save a dict to JSON?", ["dict", "JSON"]),
        ("What does json.dumps do with the 'indent' argument?", ["json.dumps", "indent"]),  # code, a quoted term
        ('What does "pip install -e ." do?', ["pip install -e ."]),
        ("How do I pass --max-count to git log?", ["--max-count"]),
        ("Explain how Django handles migrations", ["Django"]),  # "Explain" starts the sentence, names nothing
        ("Who was Ludwig van Beethoven's teacher?", ["Ludwig van Beethoven"]),
        ("what is the occupation of a painter?", []),
        ("Who is the father of But Why Not?", ["But Why Not"]),  # a racehorse named with function words
    ],
)
def test_subjects_are_names_quoted_terms_code_and_rare_words(question, subjects_):
    assert subjects(question) == subjects_


@pytest.mark.parametrize(
    "output, question",
    [
        ("I, CA, get", "How do I get the CA bundle path from certifi?"),  # lost the package
        ("I, save, dict", "How do I save a dict to JSON?"),
        ("tool, can, extract", "Which tool can extract text from PDF files?"),
        ("indent, argument", "What does json.dumps do with the 'indent' argument?"),
        ("FastAPI author Sebastián Ramírez", "Who is the author of FastAPI?"),  # answered instead
        ("Python, released, 1991", "When was Python first released?"),  # a number the question lacks
    ],
)
def test_rewrites_that_lose_the_subject_or_answer_are_rejected(output, question):
    assert parse_query(output, question) is None
    assert set(subjects(question)) <= set(fallback_query(question).keywords)  # the fallback keeps them


def test_faithful_rewrites_are_kept():
    assert parse_query("certifi, CA bundle, path", "How do I get the CA bundle path from certifi?").keywords == [
        "certifi",
        "CA bundle",
        "path",
    ]
    assert parse_query("Henry Feilden, Occupation", "What is Henry Feilden's occupation?").keywords == [
        "Henry Feilden",
        "Occupation",
    ]
    assert parse_query("json.dumps indent", "What does json.dumps do with the 'indent' argument?") is not None


def test_fallback_puts_subjects_first_then_the_rarest_words():
    assert fallback_query("How do I get the CA bundle path from certifi?").keywords == ["CA", "certifi", "bundle"]
    assert fallback_query("Which tool can extract text from PDF files?").keywords[0] == "PDF"


def test_refine_scores_strips_with_their_document_s_title():
    class Recorder(FakeEvaluator):
        def invoke(self, value, config=None):
            self.titles = [d.metadata["title"] for d in value["documents"]]
            return super().invoke(value, config)

    evaluator = Recorder({}, default=0.0)
    refine(
        "q",
        [passage("He was born in Pelham Manor, New York.", "Anna Berg"), passage("Another long enough strip.", "Carl")],
        evaluator,
        mode="excerption",
        top_k=5,
        threshold=-0.5,
        origin="internal",
    )
    assert evaluator.titles == ["Anna Berg", "Carl"]
    assert parse_query("Henri Becquerel, answer", "Who was Henri Becquerel?").keywords == ["Henri Becquerel"]


def test_fallback_keywords_come_from_the_question():
    assert fallback_query("What is Henry Feilden's occupation?").text == "Henry Feilden, occupation"
    assert fallback_query("In what city was Billy Carlson born?").keywords[0] == "Billy Carlson"
    assert fallback_query("?").keywords  # never empty
    # a quoted subject that is no keyword is left out, not a validation error (hypothesis found "`:`")
    assert fallback_query("`:`").keywords
    assert fallback_query("what does `:` do in `git log`").keywords == ["git log"]
    assert "a b c d e f g h" not in fallback_query("is `a b c d e f g h` too long").keywords


def test_final_knowledge_follows_the_action():
    internal = [{"text": "i"}]
    external = [{"text": "e"}]
    state = {"internal_knowledge": internal, "external_knowledge": external}
    assert final_knowledge({**state, "action": "correct"}) == internal
    assert final_knowledge({**state, "action": "incorrect"}) == external
    assert final_knowledge({**state, "action": "ambiguous"}) == internal + external


def test_keep_best_keeps_the_best_strip_of_relevant_documents_below_the_threshold():
    passages = [
        passage("Anna Berg was a Swedish painter of flowers. She lived in Stockholm all her life.", "Anna Berg")
    ]
    evaluator = FakeEvaluator({"painter": -0.7}, default=-0.95)
    kwargs = {"mode": "fixed_num", "top_k": 5, "threshold": -0.5, "origin": "internal"}
    assert refine("What was Anna Berg's job?", passages, evaluator, **kwargs) == []
    kept = refine("What was Anna Berg's job?", passages, evaluator, keep_best=True, **kwargs)
    assert [s["score"] for s in kept] == [-0.7]


def _three_strips():
    """Three one-strip documents the evaluator scores alike; only the second says what was asked."""
    return [
        passage("grep searches files for lines that match a pattern.", "grep", "grep.1"),
        passage("grep --context prints lines of context around each match.", "grep", "grep.1"),
        passage("grep exits with status two when an error occurred.", "grep", "grep.1"),
    ]


def standing(question_vector, vectors):
    """A strip's standing as refinement computes it: its cosine with the question within its set."""
    return standings_of(cosines(question_vector, vectors))


def test_standing_is_the_cosine_above_the_set_mean_in_standard_deviations():
    assert (
        standing([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])[0]
        > 0
        > standing([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])[1]
    )
    scaled = standing([3.0, 0.0], [[5.0, 0.0], [0.0, 2.0], [1.0, 1.0]])  # lengths do not matter
    assert scaled == pytest.approx(standing([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    assert standing([1.0, 0.0], [[1.0, 1.0]] * 3) == [0.0, 0.0, 0.0]  # equal cosines: nobody stands out
    assert standing([0.0, 0.0], [[1.0, 0.0], [0.0, 0.0]]) == [0.0, 0.0]  # zero vectors do not divide by zero


@given(
    st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=20),
    st.floats(-5.0, 5.0),
    st.floats(0.0, 10.0),
)
def test_set_adjusted_stays_on_the_score_scale_and_keeps_the_order_at_equal_standing(scores, z, weight):
    adjusted = set_adjusted(scores, [z] * len(scores), weight)
    assert all(-1.0 <= a <= 1.0 for a in adjusted)
    order = sorted(range(len(scores)), key=lambda i: (scores[i], i))
    assert all(adjusted[a] <= adjusted[b] for a, b in pairwise(order))
    assert set_adjusted(scores, [z] * len(scores), 0.0) == pytest.approx(scores, abs=1e-5)


def test_refine_ranks_strips_by_their_standing_among_the_question_s_strips():
    question = "how do I print lines of context around each match with grep"
    embedder = WordEmbeddings()
    common = {
        "mode": "selection",
        "top_k": 1,
        "threshold": -0.5,
        "embed": embedder.embed_documents,
        "set_weight": WEIGHT,
    }
    # alike, and below the threshold on their own; the grade judged the documents relevant
    kept = refine(
        question, _three_strips(), FakeEvaluator({}, default=-0.6), origin="internal", keep_best=True, **common
    )
    assert [s["text"] for s in kept] == [_three_strips()[1].page_content]
    assert kept[0]["score"] == -0.6 and kept[0]["selection_score"] > -0.5
    assert embedder.calls == 1  # the question and every strip in one call
    # web results nobody graded: the standing still ranks them, but the evaluator's own score must clear the threshold
    rules = {"context": -0.4, "searches": -0.3}
    web = refine(question, _three_strips(), FakeEvaluator(rules, default=-0.6), origin="external", **common)
    assert [s["text"] for s in web] == [_three_strips()[1].page_content]  # ranked first by its standing
    web = refine(
        question, _three_strips(), FakeEvaluator(rules, default=-0.6), origin="external", **{**common, "top_k": 3}
    )
    assert [s["text"] for s in web] == [p.page_content for p in _three_strips()[:2]]  # the third fails on its own score
    web = refine(question, _three_strips(), FakeEvaluator({}, default=-0.6), origin="external", **common)
    assert web == []
    plain = refine(
        question,
        _three_strips(),
        FakeEvaluator({}, default=-0.6),
        origin="internal",
        keep_best=True,
        **{**common, "threshold": 0.0, "set_weight": 0.0},
    )
    assert [s["text"] for s in plain] == [_three_strips()[0].page_content]  # weight 0: the evaluator's order
    assert embedder.calls == 4  # and no embedding


def test_a_strip_of_a_document_the_grade_rejected_is_judged_by_its_own_score():
    question = "how do I print lines of context around each match with grep"
    common = {
        "mode": "selection",
        "top_k": 3,
        "threshold": -0.5,
        "embed": WordEmbeddings().embed_documents,
        "set_weight": WEIGHT,
    }
    evaluator = FakeEvaluator({}, default=-0.6)
    lifted = refine(question, _three_strips(), evaluator, origin="internal", **common)
    assert [s["text"] for s in lifted] == [_three_strips()[1].page_content] and lifted[0]["lifted"]
    # the same passage, scored below the lower threshold by the grade: ranked as before, not lifted over
    rejected = [False, True, False]
    assert refine(question, _three_strips(), evaluator, origin="internal", rejected=rejected, **common) == []
    [best] = refine(
        question, _three_strips(), evaluator, origin="internal", rejected=rejected, keep_best=True, **common
    )
    assert best["text"] == _three_strips()[1].page_content and not best["lifted"]
    assert judged(best) == best["score"] == -0.6 < best["selection_score"]  # a quote reads its own score too
    assert judged(lifted[0]) == lifted[0]["selection_score"]


def test_refine_does_not_rank_by_standing_in_sets_of_two():
    embedder = WordEmbeddings()
    kept = refine(
        "grep context",
        _three_strips()[:2],
        FakeEvaluator({"searches": 0.2}, default=0.1),
        mode="selection",
        top_k=1,
        threshold=-0.5,
        origin="internal",
        embed=embedder.embed_documents,
    )
    assert [s["text"] for s in kept] == [_three_strips()[0].page_content] and embedder.calls == 0
    assert kept[0]["selection_score"] == kept[0]["score"]


def test_sentences_are_split_alike_on_threads_side_by_side():
    """pysbd keeps the text it splits on its segmenter: one shared by Self-RAG's parallel candidates (or a server's
    requests) handed a thread another's sentences, or none, and the answer lost its citations."""
    from concurrent.futures import ThreadPoolExecutor

    texts = ["Anna Berg was a Swedish painter.", "She painted the sea. Her works hang in Stockholm."] * 200
    with ThreadPoolExecutor(4) as pool:
        split = list(pool.map(sentence_spans, texts))
    assert split == [sentence_spans(t) for t in texts]
