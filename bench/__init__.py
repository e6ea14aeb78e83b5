"""Benchmarks for Unhooked: ``python -m bench engine``; results are written up in ``bench/RESULTS.md``."""
