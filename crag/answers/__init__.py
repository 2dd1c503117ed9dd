"""Each sentence of an answer linked to the strips that support it."""
