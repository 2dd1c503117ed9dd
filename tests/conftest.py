"""Shared fixtures: tiny real models built here, saved to temp folders and loaded by the real code."""

from __future__ import annotations

import os

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest


def _tokenizer():
    from transformers import AutoTokenizer

    from crag.core.base_model import PACKAGED_BASE, resolve_base

    return AutoTokenizer.from_pretrained(resolve_base(PACKAGED_BASE))


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """A 2-layer BERT cross-encoder with one output and random weights."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    tokenizer = _tokenizer()
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=512, num_labels=1,
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
        vocab_size=tokenizer.vocab_size, d_model=16, d_ff=32, d_kv=8, num_layers=1, num_heads=2,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.pad_token_id, num_labels=1,
    )
    path = tmp_path_factory.mktemp("tiny-t5")
    T5ForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
