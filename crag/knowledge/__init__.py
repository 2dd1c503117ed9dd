"""What knowledge the reader is given: the action trigger (`routing`), refinement and its budget, the web query
and the knowledge base searched again."""
