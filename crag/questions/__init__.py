"""Questions as CRAG takes them: what a question must be (`checks`), and follow-ups on a thread made self-contained."""
