"""Where knowledge is searched: the knowledge base (a Chroma collection, embeddings and BM25) and the web (local
BM25, Tavily, Wikipedia, SearxNG, a user's own)."""
