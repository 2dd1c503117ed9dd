"""The eval knowledge base for the benchmark scripts: the same arguments and defaults as `crag eval run`,
so a benchmark reads the Chroma collection an eval run built instead of building another."""

from __future__ import annotations

import argparse
from pathlib import Path

from crag.evaluation.inputs import read_passages
from crag.evaluation.kb import DEFAULT_CHROMA_DIR, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, ensure_collection


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kb", type=Path, required=True, help="the knowledge base's JSONL (as crag eval run)")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE)
    parser.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP)
    parser.add_argument("--chroma-dir", default=str(DEFAULT_CHROMA_DIR))


def collection(args: argparse.Namespace) -> str:
    """The collection holding the knowledge base's chunks (built once, if no eval run has)."""
    name, _, _ = ensure_collection(
        read_passages(args.kb), args.chroma_dir, chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap
    )
    return name
