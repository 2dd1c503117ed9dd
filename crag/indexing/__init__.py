"""Documents read, cut into chunks and stored: files and pages (`crag ingest`) and LangChain Documents
(`crag.ingest`), through LangChain's Indexing API into any vector store."""
