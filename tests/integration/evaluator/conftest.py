"""Fixtures of the evaluator tests: tiny real models built here and saved to temp folders (loaded by
the real code), and a miniature of ../shared/data."""

from __future__ import annotations

import json

import pytest


def _tokenizer():
    from transformers import AutoTokenizer

    from crag.models.base_model import PACKAGED_BASE, resolve_base

    return AutoTokenizer.from_pretrained(resolve_base(PACKAGED_BASE))


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """A 2-layer BERT cross-encoder with one output and random weights."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    tokenizer = _tokenizer()
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=512,
        num_labels=1,
    )
    path = tmp_path_factory.mktemp("tiny-bert")
    BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory):
    """A CRAG-format evaluator: T5ForSequenceClassification, num_labels=1, fed "q [SEP] p"."""
    import torch
    from transformers import T5Config, T5ForSequenceClassification

    torch.manual_seed(0)
    tokenizer = _tokenizer()
    config = T5Config(
        vocab_size=tokenizer.vocab_size,
        d_model=16,
        d_ff=32,
        d_kv=8,
        num_layers=1,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        num_labels=1,
    )
    path = tmp_path_factory.mktemp("tiny-t5")
    T5ForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="session")
def mini_shared_data(tmp_path_factory):
    """A miniature copy of ../shared/data's layout with made-up rows, for the data builder."""
    root = tmp_path_factory.mktemp("shared-data")
    people = ["Anna Berg", "Carl Dahl", "Eva Falk", "Gus Holm", "Ida Juhl", "Karl Lund"]
    questions, strips = [], []
    for i, name in enumerate(people):
        q_index = 100 + i * 150  # two land in validation (100..399), four in training
        questions.append(
            {
                "q_index": q_index,
                "id": i,
                "question": f"What is {name}'s occupation?",
                "answers": ["painter"],
                "prop": "occupation",
                "subject": name,
                "s_wiki_title": name,
                "pop": 50,
            }
        )
        strips += [
            {
                "q_index": q_index,
                "rank": 0,
                "title": name.upper(),
                "text": f"{name} was a painter born in a small town by the sea.",
            },
            {
                "q_index": q_index,
                "rank": 1,
                "title": f"{name} (footballer)",
                "text": f"{name} is a footballer who plays as a striker for a club.",
            },
            {"q_index": q_index, "rank": 2, "title": name, "text": "Stub."},  # too short: dropped
        ]
    corpus = [
        {"id": f"w{i}", "title": f"Place {i}", "text": f"Place {i} is a village with a church and a mill."}
        for i in range(30)
    ]
    multihop = [
        {
            "source": "hotpotqa",
            "qid": f"h{i}",
            "question": f"Which river flows through town {i}?",
            "title": f"Town {i}",
            "text": f"Town {i} lies on the banks of a long river.",
            "label": i % 2,
        }
        for i in range(20)
    ]
    bio = [
        {
            "source": "bio",
            "qid": f"bio-{100 + i}",
            "question": f"Who is {name}?",
            "topic": name,
            "rank": rank,
            "title": title,
            "text": text,
            "label": int(title == name),
        }
        for i, name in enumerate(["Lena Moe", "Nils Ohm", "Olga Pihl", "Per Quist", "Rut Sand", "Sven Tell"])
        for rank, (title, text) in enumerate(
            [
                (name, f"{name} is a Swedish sculptor whose works stand in many public squares."),
                (f"{name} (singer)", f"{name} is a singer from Oslo who recorded four albums of folk songs."),
            ]
        )
    ]
    _write(root / "relevance/bio_contriever_top10.jsonl", bio)
    _write(root / "popqa/questions.jsonl", questions)
    _write(root / "popqa/web_strips.jsonl", strips)
    _write(root / "corpus/wiki_passages.jsonl", corpus)
    _write(root / "relevance/multihop_pairs.jsonl", multihop)
    return root


@pytest.fixture(scope="session")
def built_data(mini_shared_data, tmp_path_factory):
    from lab.evaluator.data import Recipe, build_data

    out = tmp_path_factory.mktemp("pairs")
    # question-swap negatives are off by default now; on here so that their code stays tested
    manifest = build_data(mini_shared_data, out, Recipe(swap_negatives=1, dev_fraction=0.5), progress=False)
    return out, manifest
