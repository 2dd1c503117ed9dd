"""Reading the inputs (errors name file and line), --drop-gold, and building the PopQA inputs."""

from __future__ import annotations

import json

import pytest

from crag.evaluation.inputs import (
    Passage,
    Question,
    drop_gold,
    gold_indices,
    read_passages,
    read_passages_counted,
    read_questions,
)
from lab.datasets.popqa import build_popqa
from tests.fakes import write_jsonl


def test_read_questions_keys_by_id_or_line(tmp_path):
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": 7, "question": "  Who   is X? ", "answers": ["a", ""], "prop": "p"},
            {"question": "Where?", "answers": "b"},
        ],
    )
    first, second = read_questions(path)
    assert (first.qid, first.question, first.answers, first.extra) == ("7", "Who is X?", ("a",), {"id": 7, "prop": "p"})
    assert (second.qid, second.answers) == ("line-2", ("b",))


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"question": "Q?"}', '"answers" must be a list'),
        ('{"question": "Q?", "answers": [""]}', '"answers" is empty'),
        ('{"answers": ["a"]}', 'no "question"'),
        ('{"question": "Q?", "answers": [1]}', '"answers" must be a list of strings'),
        ("not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_read_questions_names_the_bad_line(tmp_path, line, message):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "Fine?", "answers": ["x"]}\n\n' + line + "\n")
    with pytest.raises(ValueError, match=message) as info:
        read_questions(path)
    assert f"{path}, line 3" in str(info.value)


def test_read_questions_rejects_repeated_ids_and_missing_files(tmp_path):
    path = write_jsonl(
        tmp_path / "q.jsonl",
        [{"id": 1, "question": "A?", "answers": ["a"]}, {"id": 1, "question": "B?", "answers": ["b"]}],
    )
    with pytest.raises(ValueError, match="line 2: question id '1' repeats line 1"):
        read_questions(path)
    with pytest.raises(FileNotFoundError, match="questions file"):
        read_questions(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="has no questions"):
        read_questions(tmp_path / "empty.jsonl")


def test_read_passages(tmp_path):
    path = write_jsonl(tmp_path / "kb.jsonl", [{"id": "d1", "title": "T", "text": "Text one."}, {"text": "Text two."}])
    assert read_passages(path) == [Passage("d1", "T", "Text one."), Passage("line-2", "", "Text two.")]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"title": "T", "text": "ok"}, {"title": 3, "text": "x"}])
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2: \"title\" must be a string"):
        read_passages(bad)
    bad = write_jsonl(tmp_path / "bad2.jsonl", [{"title": "T", "text": 7}])
    with pytest.raises(ValueError, match='line 1: no "text"'):
        read_passages(bad, "web")
    with_empty = write_jsonl(
        tmp_path / "dump.jsonl", [{"title": "Category:X", "text": "  "}, {"title": "T", "text": "ok"}]
    )
    assert read_passages_counted(with_empty) == ([Passage("line-2", "T", "ok")], 1)  # skipped and counted
    with pytest.raises(ValueError, match="has no records with text"):
        read_passages(write_jsonl(tmp_path / "hollow.jsonl", [{"text": ""}]))


PASSAGES = [
    Passage(f"p{i}", "", text)
    for i, text in enumerate(
        [
            "Anna Berg was a painter.",
            "Oslo has museums.",
            "Carl Dahl plays football as a footballer.",
            "A painter of the sea.",
            "Bergen is rainy.",
            "Pop music and Napoleon.",
            "Population of Poland.",
        ]
    )
]
QUESTIONS = [
    Question("1", "Anna?", ("painter",)),
    Question("2", "Carl?", ("footballer",)),
    Question("3", "Genre?", ("pop", "pol")),
]


def test_gold_passages_contain_an_answer_as_a_word():
    assert gold_indices(PASSAGES, QUESTIONS) == [0, 2, 3, 5]


@pytest.mark.parametrize("fraction, dropped", [(0.0, 0), (0.25, 1), (0.5, 2), (0.75, 3), (1.0, 4)])
def test_drop_gold_removes_only_answer_bearing_passages(fraction, dropped):
    kept, removed = drop_gold(PASSAGES, QUESTIONS, fraction, seed=3)
    assert len(removed) == dropped and len(kept) == len(PASSAGES) - dropped
    assert {p.key for p in removed} <= {"p0", "p2", "p3", "p5"}
    assert [p for p in PASSAGES if p not in removed] == kept  # order kept


def test_drop_gold_is_seeded_and_nested():
    assert drop_gold(PASSAGES, QUESTIONS, 0.5, seed=1) == drop_gold(PASSAGES, QUESTIONS, 0.5, seed=1)
    halves = {tuple(p.key for p in drop_gold(PASSAGES, QUESTIONS, 0.5, seed=s)[1]) for s in range(20)}
    assert len(halves) > 1  # the seed matters
    for seed in range(5):
        quarter = set(drop_gold(PASSAGES, QUESTIONS, 0.25, seed=seed)[1])
        half = set(drop_gold(PASSAGES, QUESTIONS, 0.5, seed=seed)[1])
        assert quarter <= half


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_drop_gold_rejects_fractions_outside_0_1(fraction):
    with pytest.raises(ValueError, match="between 0 and 1"):
        drop_gold(PASSAGES, QUESTIONS, fraction)


def test_build_popqa_writes_the_three_inputs(tmp_path):
    data = tmp_path / "data"
    (data / "popqa").mkdir(parents=True)
    (data / "corpus").mkdir()
    write_jsonl(
        data / "popqa" / "questions.jsonl",
        [
            {
                "q_index": 99,
                "id": 1,
                "question": "Who is Zed Quill?",
                "answers": ["x"],
                "subject": "Zed Quill",
                "prop": "occupation",
            },
            {
                "q_index": 100,
                "id": 2,
                "question": "What is A's occupation?",
                "answers": ["painter"],
                "s_wiki_title": "A",
                "subject": "A",
                "prop": "occupation",
            },
            {
                "q_index": 400,
                "id": 3,
                "question": "Where is Oslo?",
                "answers": ["Norway"],
                "subject": "Oslo",
                "prop": "country",
            },
        ],
    )
    write_jsonl(
        data / "popqa" / "crag_selected_passages.jsonl",
        [
            {"q_index": 100, "text": "A was a painter of note.  A second passage about A here."},
            {"q_index": 400, "text": "."},
        ],
    )
    write_jsonl(
        data / "popqa" / "web_strips.jsonl",
        [
            {"q_index": 100, "rank": 0, "title": "A", "text": "A is a painter."},
            {"q_index": 100, "rank": 1, "title": "A", "text": "A lived in Oslo."},
        ],
    )
    write_jsonl(
        data / "corpus" / "wiki_passages.jsonl", [{"id": "w0", "title": "Oslo", "text": "Oslo is a city in Norway."}]
    )
    manifest = build_popqa(data, tmp_path / "out")
    read = lambda name: [json.loads(line) for line in (tmp_path / "out" / name).read_text().splitlines()]
    assert [q["id"] for q in read("questions.jsonl")] == [2]
    phrased = read("questions-phrased.jsonl")  # the same question, answers and id, asked another way
    assert [(q["id"], q["answers"]) for q in phrased] == [(2, ["painter"])]
    assert phrased[0]["question"] != "What is A's occupation?" and "A" in phrased[0]["question"]
    assert phrased[0]["popqa_question"] == "What is A's occupation?"
    kb = read("kb.jsonl")
    assert kb[0] == {
        "id": "selected-0",
        "title": "",
        "text": "A was a painter of note.\n\nA second passage about A here.",
    }
    assert kb[1]["title"] == "Oslo" and len(kb) == 2  # the one-character passage is skipped
    # outside the split and its subject nowhere in the sources: unanswerable (Oslo is in the knowledge base)
    mixed = read("questions-with-unanswerable.jsonl")
    assert [(q["id"], q.get("answerable", True), q["answers"]) for q in mixed] == [
        (2, True, ["painter"]),
        ("unanswerable-1", False, []),
    ]
    assert manifest["questions_with_unanswerable"] == 2
    web = read("web.jsonl")
    assert all("q_index" not in w and "rank" not in w for w in web)
    assert len({w["url"] for w in web}) == 2  # strips of one page keep distinct URLs
    assert manifest["questions"] == 1 and manifest["kb"] == {"selected_passages": 1, "wikipedia_distractors": 1}
    with pytest.raises(ValueError, match="unknown split"):
        build_popqa(data, tmp_path / "out", "test")
    with pytest.raises(FileNotFoundError, match="shared data"):
        build_popqa(tmp_path / "nowhere", tmp_path / "out")


def test_unanswerable_questions_need_the_explicit_mark(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"question": "Who?", "answers": [], "answerable": False}])
    assert not read_questions(path)[0].answerable
    with pytest.raises(ValueError, match="answerable"):
        read_questions(write_jsonl(tmp_path / "r.jsonl", [{"question": "Who?", "answers": []}]))
    with pytest.raises(ValueError, match="has answers"):
        read_questions(write_jsonl(tmp_path / "s.jsonl", [{"question": "Who?", "answers": ["x"], "answerable": False}]))


def test_a_subject_is_unanswerable_only_when_none_of_its_rare_words_occur():
    from lab.datasets.popqa import unanswerable_questions

    kb = [
        {"title": "", "text": "The Dragomirna is a left tributary of the river Suceava in Romania."},
        {"title": "", "text": "Kenneth Graham Bevan (1898-1993) was an Anglican missionary bishop in China."},
        {"title": "Kenneth Clark", "text": "A historian who presented Civilisation."},
    ]
    web = [{"title": "Bevan", "text": "Aneurin Bevan was a Welsh politician."}]
    questions = [
        {"q_index": 1, "id": i, "question": f"Who is {s}?", "subject": s, "prop": "occupation"}
        for i, s in enumerate(
            ["Dragomirna River", "Călmuș River", "Taxi at Midnight", "Kenneth Bevan", "Kenneth Jones"]
        )
    ]
    # "Dragomirna River" does not occur as written, but its name does; "Kenneth Bevan" neither, but
    # both its words are in one passage: the sources can answer them. "Kenneth" and "Bevan" apart, or
    # "Kenneth" without "Jones", answer nothing
    assert [q["subject"] for q in unanswerable_questions(questions, kb, web, (100, 200))] == [
        "Călmuș River",
        "Taxi at Midnight",
        "Kenneth Jones",
    ]
