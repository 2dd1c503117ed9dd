"""Backends behind the CRAG graph (retrieval store, embeddings, web search, LLMs); importing this loads nothing."""
