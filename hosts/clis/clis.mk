# The real Claude Code and Codex CLIs for tests/hosts: included from the main Makefile. They come
# from the npm registry, pinned with their whole tree by hosts/clis/package-lock.json, into
# .venv/host-clis (so `make clean` removes them with the virtualenv). Claude Code's install script
# copies its platform's native binary into place, so scripts run here.

HOST_CLIS_LOCK := hosts/clis/package.json hosts/clis/package-lock.json
HOST_CLIS_DIR := $(VENV)/host-clis
HOST_CLIS_STAMP := $(HOST_CLIS_DIR)/.installed

.PHONY: host-clis

$(HOST_CLIS_STAMP): $(HOST_CLIS_LOCK)
	$(call require-node,tests/hosts (the Claude Code and Codex CLIs))
	mkdir -p $(HOST_CLIS_DIR)
	cp $(HOST_CLIS_LOCK) $(HOST_CLIS_DIR)/
	npm ci --prefix $(HOST_CLIS_DIR) --no-audit --no-fund --loglevel=error
	$(HOST_CLIS_DIR)/node_modules/.bin/claude --version
	$(HOST_CLIS_DIR)/node_modules/.bin/codex --version
	touch $@

host-clis: $(HOST_CLIS_STAMP)  ## Install the pinned Claude Code and Codex CLIs (npm) that tests/hosts drives.
