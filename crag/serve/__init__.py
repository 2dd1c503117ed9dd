"""Serving the graph over HTTP: the LangServe app (`create_app`) and the `crag serve` command."""
