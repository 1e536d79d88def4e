"""Benchmarks (not collected by pytest): run ``python tests/bench/bench_<name>.py``."""
