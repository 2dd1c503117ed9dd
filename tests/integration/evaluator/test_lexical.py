"""The lexical overlap blended into the evaluator's score: the feature, its IDF table, the fitted head,
and a checkpoint that carries a blend."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crag.core.text import terms
from crag.evaluator_model.checkpoint import METADATA_FILE, EvaluatorError
from crag.evaluator_model.lexical import IDF_FILE, Blend, IdfTable, fit_blend, overlap
from crag.evaluator_model.model import load_scorer

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
