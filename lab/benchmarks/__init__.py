"""Benchmark scripts: each prints its figures (`python -m lab.benchmarks.NAME --help`)."""
