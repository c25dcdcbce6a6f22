"""PowerContext benchmark suite: `make bench` / `make bench-quick` (see docs/benchmarks.md)."""
