"""The lexical overlap blended into the evaluator's score: the feature, its IDF table, the fitted head,
and a checkpoint that carries a blend."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crag.evaluator.checkpoint import METADATA_FILE, EvaluatorError
from crag.evaluator.lexical import IDF_FILE, Blend, IdfTable, contrasts, fit_blend, overlap
from crag.evaluator.model import load_scorer
from crag.text import terms

CORPUS = [
    "Robert Jonckheere was a French astronomer known for double stars.",
    "Iron River is a city in Wisconsin on the river.",
    "The telenovela was directed by Manolo Garcia in Mexico City.",
    "A city is a large human settlement.",
]
TABLE = IdfTable.from_corpus(CORPUS, min_df=1)


def test_terms_drop_stopwords_and_question_words_and_stem():
    assert terms("What is the occupation of the astronomers?") == ["occup", "astronom"]
    assert terms("Who directed it?") == ["direct"]


def test_rare_terms_weigh_more_than_common_ones():
    assert TABLE.idf("jonckheer") > TABLE.idf("citi") > 0
    assert TABLE.idf("never-seen") > TABLE.idf("jonckheer")  # unseen counts as the rarest


def test_overlap_is_the_idf_weighted_share_of_question_terms_found():
    question = "Which city is Iron River in?"
    assert overlap(TABLE, question, CORPUS[1]) == pytest.approx(1.0)
    assert overlap(TABLE, question, "Nothing shared here.") == 0.0
    weights = {t: TABLE.idf(t) for t in ["citi", "iron", "river"]}
    expected = weights["citi"] / sum(weights.values())
    assert overlap(TABLE, question, CORPUS[3]) == pytest.approx(expected)


def test_question_without_content_words_has_no_overlap():
    assert overlap(TABLE, "Who is it?", CORPUS[0]) == 0.0


@settings(max_examples=200, deadline=None)
@given(question=st.text(max_size=200), passage=st.text(max_size=400))
def test_overlap_stays_in_unit_interval_for_any_text(question, passage):
    value = overlap(TABLE, question, passage)
    assert 0.0 <= value <= 1.0 and not math.isnan(value)


@settings(max_examples=100, deadline=None)
@given(question=st.text(min_size=1, max_size=200))
def test_a_passage_holding_the_whole_question_overlaps_fully_or_not_at_all(question):
    assert overlap(TABLE, question, question) in (0.0, pytest.approx(1.0))


def test_idf_table_round_trips_and_prunes_rare_terms(tmp_path):
    table = IdfTable.from_corpus(CORPUS, min_df=2)
    assert set(table.df) == {"citi"}  # the only term in two passages ("river" twice in one counts once)
    table.save(tmp_path / IDF_FILE)
    assert IdfTable.load(tmp_path / IDF_FILE) == table
    with pytest.raises(ValueError, match="empty"):
        IdfTable.from_corpus([])


def test_fit_blend_weighs_the_feature_that_separates_the_labels():
    labels = [1, 0] * 50
    informative = [0.9 if y else 0.1 for y in labels]
    noise = [0.5 + 0.01 * (i % 7) for i in range(100)]
    blend = fit_blend(noise, informative, labels)
    assert blend.lexical > 1.0 and abs(blend.model) < blend.lexical
    with pytest.raises(ValueError, match="both"):
        fit_blend([0.1, 0.2], [0.3, 0.4], [1, 1])


def _blended_checkpoint(tiny_bert, tmp_path, blend: Blend):
    import shutil

    path = tmp_path / "blended"
    shutil.copytree(tiny_bert, path)
    TABLE.save(path / IDF_FILE)
    (path / METADATA_FILE).write_text(json.dumps({"kind": "full", "blend": blend.as_dict()}))
    return path


def test_a_checkpoint_with_a_blend_scores_by_it(tiny_bert, tmp_path):
    pairs = [("Which city is Iron River in?", CORPUS[1]), ("Which city is Iron River in?", CORPUS[2])]
    plain = load_scorer(tiny_bert)
    logits = plain.model_logits(pairs)
    blend = Blend(model=0.5, lexical=4.0, bias=-1.0)
    scorer = load_scorer(_blended_checkpoint(tiny_bert, tmp_path, blend))
    expected = [math.tanh((0.5 * z + 4.0 * overlap(TABLE, q, p) - 1.0) / 2) for z, (q, p) in zip(logits, pairs)]
    assert scorer.score(pairs) == pytest.approx(expected, abs=1e-5)
    assert scorer.score(pairs, blend=False) == pytest.approx(plain.score(pairs), abs=1e-5)  # the model alone
    assert scorer.score([(pairs[0][0], "  ")]) == [-1.0]  # empty passages still skip everything


def test_a_missing_idf_file_is_a_clear_error(tiny_bert, tmp_path):
    path = _blended_checkpoint(tiny_bert, tmp_path, Blend(model=1.0, lexical=1.0, bias=0.0))
    (path / IDF_FILE).unlink()
    with pytest.raises(EvaluatorError, match="lexical blend"):
        load_scorer(path)


GREP_CHUNKS = [  # three chunks of one man page: all say "grep", one answers
    "grep searches for patterns in each file and prints each line that matches.",
    "grep -i ignores case distinctions in patterns and input data.",
    "grep -C NUM prints NUM lines of output context around each matching line.",
]


def test_contrast_weighs_the_terms_that_set_a_passage_apart_from_those_retrieved_with_it():
    question = "How do I make grep print context lines around a match?"
    pairs = [(question, chunk) for chunk in GREP_CHUNKS]
    values = contrasts(TABLE, pairs)
    assert values[2] == max(values) and values[2] > values[0] > 0  # "context" sets the answer apart
    assert all(0.0 <= v <= 1.0 for v in values)
    # "grep" is in every chunk, so it counts for less than in the pointwise overlap
    assert values[0] < overlap(TABLE, question, GREP_CHUNKS[0])


def test_contrast_sets_are_the_groups_and_questions_they_are_scored_with():
    question = "How do I make grep print context lines around a match?"
    pairs = [(question, chunk) for chunk in GREP_CHUNKS]
    together = contrasts(TABLE, pairs + pairs, groups=[0, 0, 0, 1, 1, 1])
    alone = contrasts(TABLE, pairs)
    assert together[:3] == pytest.approx(alone) and together[3:] == pytest.approx(alone)
    other = ("Which city is Iron River in?", CORPUS[1])  # another question never shares a set
    assert contrasts(TABLE, [*pairs, other])[:3] == pytest.approx(contrasts(TABLE, pairs))
    assert contrasts(TABLE, [other]) == pytest.approx([1.0])  # alone: the plain share of its terms
    assert contrasts(TABLE, [("Who is it?", CORPUS[0])]) == [0.0]
    with pytest.raises(ValueError, match="groups"):
        contrasts(TABLE, pairs, groups=[0])


@settings(max_examples=100, deadline=None)
@given(question=st.text(max_size=120), passages=st.lists(st.text(max_size=200), min_size=1, max_size=6))
def test_contrast_stays_in_unit_interval_for_any_text(question, passages):
    values = contrasts(TABLE, [(question, p) for p in passages])
    assert len(values) == len(passages) and all(0.0 <= v <= 1.0 and not math.isnan(v) for v in values)


def test_fit_blend_with_contrast_and_weights():
    labels = [1, 0] * 50
    informative = [0.9 if y else 0.1 for y in labels]
    noise = [0.5 + 0.01 * (i % 7) for i in range(100)]
    blend = fit_blend(noise, noise, labels, contrasts=informative, weights=[1.0] * 100)
    assert blend.contrast > 1.0 and blend.contrast > abs(blend.lexical)
    with pytest.raises(ValueError, match="contrasts"):
        blend.logits([0.0], [0.5])  # a head that weighs contrast cannot score without it
    old = Blend(model=1.0, lexical=2.0, bias=-1.0)  # heads from before contrast score as they did
    assert old.contrast == 0.0 and old.logits([1.0], [0.5]) == [1.0]


def test_a_checkpoint_with_a_contrast_blend_scores_each_set_by_it(tiny_bert, tmp_path):
    question = "How do I make grep print context lines around a match?"
    pairs = [(question, chunk) for chunk in GREP_CHUNKS]
    plain = load_scorer(tiny_bert)
    logits = plain.model_logits(pairs)
    blend = Blend(model=0.5, lexical=1.0, bias=-1.0, contrast=3.0)
    scorer = load_scorer(_blended_checkpoint(tiny_bert, tmp_path, blend))
    sets = contrasts(TABLE, pairs)
    expected = [
        math.tanh((0.5 * z + overlap(TABLE, q, p) + 3.0 * c - 1.0) / 2) for z, (q, p), c in zip(logits, pairs, sets)
    ]
    assert scorer.score(pairs) == pytest.approx(expected, abs=1e-5)
    # two sets for the same question in one call are told apart by their groups
    assert scorer.score(pairs + pairs[:1], groups=[0, 0, 0, 1])[:3] == pytest.approx(expected, abs=1e-5)
    assert scorer.score([(question, "  "), *pairs])[1:] == pytest.approx(expected, abs=1e-5)  # empty ones left out
    with pytest.raises(ValueError, match="groups"):
        scorer.score(pairs, groups=[0])


def test_the_runnable_weighs_contrast_within_each_input_of_a_batch(tiny_bert, tmp_path):
    from crag.evaluator.runnable import RetrievalEvaluator

    path = _blended_checkpoint(tiny_bert, tmp_path, Blend(model=0.5, lexical=1.0, bias=-1.0, contrast=3.0))
    evaluator = RetrievalEvaluator(checkpoint=str(path))
    question = "How do I make grep print context lines around a match?"
    first = {"question": question, "documents": GREP_CHUNKS[:2]}
    second = {"question": question, "documents": GREP_CHUNKS[2:]}
    together = evaluator.batch([first, second])
    assert together[0] == pytest.approx(evaluator.invoke(first), abs=1e-5)  # one input's set is not another's
    assert together[1] == pytest.approx(evaluator.invoke(second), abs=1e-5)
    assert together[0] != pytest.approx(evaluator.invoke({"question": question, "documents": GREP_CHUNKS})[:2])


def test_fit_blend_with_sets_weighs_each_pairs_standing_in_its_set():
    # every set has one relevant pair; its logit is a little above its set's others, while the sets'
    # levels differ more than that: only the standing separates the labels
    logits, labels, sets = [], [], []
    for n in range(40):
        level = (n % 5) * 2.0
        for k in range(5):
            logits.append(level + (0.5 if k == 0 else 0.1 * k / 4))
            labels.append(int(k == 0))
            sets.append(n)
    flat = [0.5] * len(logits)
    blend = fit_blend(logits, flat, labels, sets=sets)
    assert blend.logit_standing > 1.0 and blend.contrast == 0.0
    scores = blend.logits(logits, flat, sets=sets)
    assert all(scores[i] > max(scores[i + 1 : i + 5]) for i in range(0, len(scores), 5))
    # the same pairs read as one set rank by level instead
    assert blend.logits(logits, flat) != pytest.approx(scores)
    old = Blend(**{"model": 1.0, "lexical": 2.0, "bias": -1.0})  # metadata from before the standings
    assert old.logit_standing == old.overlap_standing == 0.0
    assert old.logits([1.0, 2.0, 3.0], [0.5] * 3, sets=[0, 0, 0]) == [1.0, 2.0, 3.0]


def test_a_scaled_blend_is_the_same_head_on_another_scale():
    blend = Blend(model=0.5, lexical=1.0, bias=-1.0, contrast=2.0, logit_standing=0.3, overlap_standing=0.7)
    logits, overlaps, shares, sets = [0.2, 1.5, -0.4], [0.1, 0.9, 0.4], [0.3, 0.2, 0.8], [0, 0, 0]
    scaled = blend.scaled(2.0, 0.5)
    expected = [2.0 * z + 0.5 for z in blend.logits(logits, overlaps, shares, sets)]
    assert scaled.logits(logits, overlaps, shares, sets) == pytest.approx(expected, abs=1e-5)


def test_a_checkpoint_with_a_standing_blend_scores_each_set_by_it(tiny_bert, tmp_path):
    from crag.standing import grouped_standings

    question = "How do I make grep print context lines around a match?"
    pairs = [(question, chunk) for chunk in GREP_CHUNKS]
    logits = load_scorer(tiny_bert).model_logits(pairs)
    blend = Blend(model=0.5, lexical=1.0, bias=-1.0, logit_standing=0.8, overlap_standing=1.5)
    scorer = load_scorer(_blended_checkpoint(tiny_bert, tmp_path, blend))
    overlaps = [overlap(TABLE, q, p) for q, p in pairs]
    zs, xs = grouped_standings(logits, [0] * 3), grouped_standings(overlaps, [0] * 3)
    expected = [math.tanh((0.5 * z + x + 0.8 * a + 1.5 * b - 1.0) / 2) for z, x, a, b in zip(logits, overlaps, zs, xs)]
    assert scorer.score(pairs) == pytest.approx(expected, abs=1e-5)
    # two groups: each set stands on its own, and a set of one has no standing
    assert scorer.score(pairs + pairs[:1], groups=[0, 0, 0, 1])[:3] == pytest.approx(expected, abs=1e-5)
    alone = math.tanh((0.5 * logits[0] + overlaps[0] - 1.0) / 2)
    assert scorer.score(pairs + pairs[:1], groups=[0, 0, 0, 1])[3] == pytest.approx(alone, abs=1e-5)


def test_scoring_with_a_progress_bar_scores_the_same(tiny_bert, capsys):
    scorer = load_scorer(tiny_bert)
    pairs = [("How do I make grep print context lines?", chunk) for chunk in GREP_CHUNKS] + [("q", " ")]
    assert scorer.model_logits(pairs, 2, progress="scoring") == scorer.model_logits(pairs, 2)
    assert "scoring" in capsys.readouterr().err  # the bar, on stderr
    assert scorer.model_logits(pairs, 2)[-1] is None
