# Benchmarks: see docs/benchmarks.md. The Makefile includes this file (include bench/bench.mk).
# BENCH_DATABASES picks backends; OceanBase runs once BENCH_OCEANBASE_URL is set (URL with {n}).
BENCH_DATABASES ?= sqlite,oceanbase

.PHONY: bench-embedding bench-hooks bench bench-quick bench-smoke bench-profile bench-readme bench-tools bench-hostile bench-ingest bench-memory bench-merge bench-wal bench-scale bench-concurrency

bench-tools:  ## Install Debian's wrk (the load generator) with apt-get when it is missing, saying so.
	@command -v wrk >/dev/null 2>&1 || { \
	  echo "make bench needs wrk (an HTTP load generator): installing Debian's 'wrk' package with apt-get"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends wrk; }
	@wrk --version 2>&1 | head -n 1

bench: $(STAMP) bench-tools  ## Benchmarks at 1k/10k/100k entries per Scope; rewrites the README table.
	$(BIN)/python -m bench.run --databases $(BENCH_DATABASES) --out bench/results/latest.json
	$(BIN)/python -m bench.render

bench-quick: $(STAMP) bench-tools  ## Benchmarks at 1k/10k only, into bench/results/quick.json.
	$(BIN)/python -m bench.run --quick --databases $(BENCH_DATABASES) --out bench/results/quick.json

bench-smoke: $(STAMP) bench-tools  ## A tiny corpus and short runs: checks the harness in ~20 s.
	$(BIN)/python -m bench.run --smoke --databases sqlite --out bench/results/smoke.json

bench-hostile: $(STAMP)  ## How fast hostile requests are refused while /health/live is polled.
	$(BIN)/python -m bench.hostile

bench-profile: $(STAMP)  ## pyinstrument profiles of prepare (in process and server) into bench/profiles/.
	$(BIN)/python -m bench.profile

bench-readme: $(STAMP)  ## Rewrite the README and docs benchmark blocks from bench/results/latest.json.
	$(BIN)/python -m bench.render

bench-ingest: $(STAMP)  ## Entries/s over HTTP: batch remember against one per request, SQLite and OceanBase.
	$(BIN)/python -m bench.ingest --databases $(BENCH_DATABASES)

bench-memory: $(STAMP)  ## RSS per 40 s window of constant load (allocator variants), then latency: ~12 min.
	$(BIN)/python -m bench.memory $(BENCH_MEMORY_ARGS)

bench-hooks: $(STAMP)  ## Time the Claude Code hook commands per prompt (10k entries); docs/claude-code.md's table.
	$(BIN)/python -m bench.hooks
	$(BIN)/python -m bench.render

bench-merge: $(STAMP)  ## Index merges under 40 CJK batches of 1,000 entries: request time, peak RSS, /health/live.
	$(BIN)/python -m bench.merge_stress $(BENCH_MERGE_ARGS)

bench-wal: $(STAMP)  ## SQLite's -wal file over 60 s of 8 preparing + 8 remembering clients, and after shutdown.
	$(BIN)/python -m bench.wal_growth $(BENCH_WAL_ARGS)

bench-concurrency: $(STAMP) bench-tools  ## One server process at 10k: CPU per request from 1 and 8 connections (BENCH_CONCURRENCY_ARGS=--baseline DIR to compare).
	$(BIN)/python -m bench.concurrency_tax $(BENCH_CONCURRENCY_ARGS)

bench-embedding: $(STAMP)  ## The embedding leg at 10k entries: what it adds to a prepare (384 and 768 dimensions; and on OceanBase), to batch ingest (SQLite), and a slow endpoint with and without the back-off: ~20 min the first time.
	$(BIN)/python -m bench.embedding_leg
	$(BIN)/python -m bench.embedding_leg --widen 2
	$(BIN)/python -m bench.embedding_leg --database oceanbase
	$(BIN)/python -m bench.ingest --embedding-leg --databases sqlite --seconds 30
	$(BIN)/python -m bench.embedding_backoff

bench-scale: $(STAMP) bench-tools  ## One Scope of 1M entries (SQLite) and 200k (OceanBase): ingest, size, cold and warm prepares, two processes: ~15 min.
	$(BIN)/python -m bench.scale --databases $(BENCH_DATABASES) $(BENCH_SCALE_ARGS)
