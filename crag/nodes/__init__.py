"""The graph's nodes, one per module; each returns only the state keys it changes."""

from crag.nodes.contextualize import contextualize
from crag.nodes.generate import generate
from crag.nodes.grade import grade
from crag.nodes.refine import refine
from crag.nodes.requery import requery
from crag.nodes.retrieve import retrieve
from crag.nodes.rewrite_and_search import rewrite_and_search

__all__ = ["contextualize", "generate", "grade", "refine", "requery", "retrieve", "rewrite_and_search"]
