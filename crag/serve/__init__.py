"""Serving the graph over HTTP with LangServe."""
