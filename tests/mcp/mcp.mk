# MCP Inspector: included from the main Makefile (`include tests/mcp/mcp.mk`). tests/mcp drives its
# CLI against `powercontext mcp`. It comes from the npm registry with the machine's Node.js and npm,
# pinned with its whole tree by tests/mcp/inspector/package-lock.json, into .venv/mcp-inspector
# (so `make clean` removes it with the virtualenv). Its only install script is a no-op outside a
# source checkout of the Inspector, hence --ignore-scripts.

MCP_INSPECTOR_LOCK := tests/mcp/inspector/package.json tests/mcp/inspector/package-lock.json
MCP_INSPECTOR_DIR := $(VENV)/mcp-inspector
MCP_INSPECTOR_STAMP := $(MCP_INSPECTOR_DIR)/.installed

.PHONY: mcp-inspector mcp-test

$(MCP_INSPECTOR_STAMP): $(MCP_INSPECTOR_LOCK)
	$(call require-node,tests/mcp (the MCP Inspector))
	mkdir -p $(MCP_INSPECTOR_DIR)
	cp $(MCP_INSPECTOR_LOCK) $(MCP_INSPECTOR_DIR)/
	npm ci --prefix $(MCP_INSPECTOR_DIR) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

mcp-inspector: $(MCP_INSPECTOR_STAMP)  ## Install the pinned MCP Inspector (npm) that tests/mcp drives.

mcp-test: $(STAMP) mcp-inspector  ## `powercontext mcp` against the SDK's clients and the MCP Inspector.
	$(BIN)/pytest -q tests/mcp
