"""The chat model as the evaluator's teacher (`llm_teacher`): its grades with the prompt's start reused
are the grades without, and labelling resumes where it stopped."""

from __future__ import annotations

import json

import pytest

from crag.models.gguf import model_file
from lab.evaluator.llm_teacher import YesNoGrader, label_pairs, passage_key, read_labels

PAIRS = [
    ("What is the capital of France?", "Paris is the capital and largest city of France."),
    ("Which river flows through Paris?", "Paris is the capital and largest city of France."),
    ("What is the capital of France?", "Photosynthesis turns sunlight, water and carbon dioxide into sugar."),
    ("How do plants make sugar?", "Photosynthesis turns sunlight, water and carbon dioxide into sugar."),
]


@pytest.fixture(scope="module")
def teacher() -> YesNoGrader:
    return YesNoGrader(model_file("local"))


def test_reusing_the_prompts_start_gives_the_grades_of_whole_prompts(teacher):
    """Equal within 0.01 for the default model: exact on the machine it was written on, up to 0.004 apart on an
    AVX2-only one (llama.cpp's kernels batch the two parts differently); a cache reused from another
    prompt would be off by far more. (Not for SmolLM2-135M's Q4_1 file, whose logits llama.cpp computes
    differently when a prompt is evaluated in two parts: it is not a teacher.)"""
    reused = [teacher.score(q, p) for q, p in PAIRS]
    teacher.reuse_prefix = False
    try:
        whole = [teacher.score(q, p) for q, p in PAIRS]
    finally:
        teacher.reuse_prefix = True
    assert reused == pytest.approx(whole, abs=0.01)
    assert reused[0] > 0.5 > -0.5 > reused[2]  # Paris answers the capital question; photosynthesis does not
    assert reused[0] > reused[1] and reused[3] > reused[2]  # no river in the Paris passage; sugar is photosynthesis


def test_labels_are_appended_passage_by_passage_and_a_run_resumes(tmp_path):
    out = tmp_path / "labels.jsonl"
    asked: list[tuple[str, str]] = []

    def score(question: str, passage: str) -> float:
        asked.append((question, passage))
        return 0.5 if "France" in question and "Paris" in passage else -0.5

    first = label_pairs(PAIRS[:3], out, score, progress=False)
    assert first == {"labelled": 3, "already": 0, "left": 0, "seconds": first["seconds"]}
    passages = [p for _, p in asked]
    assert passages == sorted(passages, key=passages.index)  # each passage's questions together
    with out.open("a") as sink:
        sink.write('{"question": "torn')  # a run killed in the middle of a line
    second = label_pairs(PAIRS, out, score, progress=False)
    assert second["labelled"] == 1 and second["already"] == 3 and asked[-1] == PAIRS[3]
    labels = read_labels(out)
    assert labels[(PAIRS[0][0], passage_key(PAIRS[0][1]))] == 0.75 and len(labels) == 4
    assert all(set(json.loads(line)) == {"question", "passage", "p_yes"} for line in out.read_text().splitlines()[:3])


def test_a_time_limit_stops_between_passages(tmp_path):
    stats = label_pairs(PAIRS, tmp_path / "labels.jsonl", lambda q, p: 0.0, time_limit=0.0, progress=False)
    assert stats["labelled"] == 0 and stats["left"] == 4
