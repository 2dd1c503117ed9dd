"""What knowledge the reader is given: the action trigger, refinement, the web query, the second search."""
