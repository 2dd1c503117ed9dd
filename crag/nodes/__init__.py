"""The graphs' nodes, one per module; each returns only the state keys it changes."""

from crag.nodes.ask_again import ask_again
from crag.nodes.contextualize import contextualize
from crag.nodes.finish import finish
from crag.nodes.generate import generate
from crag.nodes.grade import grade
from crag.nodes.index_docs import index_docs
from crag.nodes.quote import quote
from crag.nodes.read_further import read_further
from crag.nodes.refine import refine
from crag.nodes.requery import requery
from crag.nodes.retrieve import retrieve
from crag.nodes.rewrite_and_search import rewrite_and_search
from crag.nodes.second_opinion import second_opinion
from crag.nodes.whole import use_documents, web_search

__all__ = [
    "ask_again",
    "contextualize",
    "finish",
    "generate",
    "grade",
    "index_docs",
    "quote",
    "read_further",
    "refine",
    "requery",
    "retrieve",
    "rewrite_and_search",
    "second_opinion",
    "use_documents",
    "web_search",
]
