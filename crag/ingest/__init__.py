"""`crag ingest`: files and pages read, cut into chunks and stored."""
