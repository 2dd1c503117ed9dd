"""Questions as CRAG takes them: validated, and follow-ups made self-contained."""
