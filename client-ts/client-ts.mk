# TypeScript client: included from the main Makefile (`include client-ts/client-ts.mk`). Its toolchain
# (openapi-typescript, TypeScript) and its one runtime dependency (openapi-fetch) come from the npm
# registry with the machine's Node.js and npm, pinned with their whole tree by
# client-ts/package-lock.json, into .venv/client-ts (so `make clean` removes them with the
# virtualenv); client-ts/node_modules links there. None of them needs an install script.

TS_LOCK := client-ts/package.json client-ts/package-lock.json
TS_DEPS_DIR := $(VENV)/client-ts
TS_STAMP := $(TS_DEPS_DIR)/.installed

.PHONY: client-ts-deps ts-test

$(TS_STAMP): $(TS_LOCK)
	$(call require-node,client-ts (the TypeScript client))
	mkdir -p $(TS_DEPS_DIR)
	cp $(TS_LOCK) $(TS_DEPS_DIR)/
	npm ci --prefix $(TS_DEPS_DIR) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

client-ts-deps: $(TS_STAMP)  ## Install the TypeScript client's pinned toolchain (npm ci).
	ln -sfn $(abspath $(TS_DEPS_DIR))/node_modules client-ts/node_modules

# The package and the tests type-check, build, then run against a real `powercontext serve`.
ts-test: $(STAMP) client-ts-deps  ## The TypeScript client: tsc --noEmit, then node --test against a real server.
	cd client-ts && node_modules/.bin/tsc --noEmit -p tsconfig.json && npm run build --silent && node --test test/*.test.mjs
