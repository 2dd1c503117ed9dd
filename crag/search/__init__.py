"""Where knowledge is searched: the knowledge base (Chroma and BM25) and the web backends."""
