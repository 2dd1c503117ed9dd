"""Documentation corpora of several kinds, each with hand-written questions (`python -m lab.corpora.build`)."""
