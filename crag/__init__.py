"""crag: Corrective Retrieval-Augmented Generation (Yan et al., 2024) as a LangGraph agent."""

__version__ = "0.1.0"
