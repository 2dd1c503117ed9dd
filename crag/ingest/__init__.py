"""`crag ingest`: which files are read and how (HTML, PDF, Markdown, reStructuredText, Info, URLs), cut into
chunks and stored."""
