"""One-off studies behind the reports in docs/reports/ (`python -m lab.experiments.NAME --help`)."""
