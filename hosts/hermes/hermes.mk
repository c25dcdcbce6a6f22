# Hermes Agent host: included from the main Makefile (`include hosts/hermes/hermes.mk`).
# Uses BIN, STAMP and PYTHON from the main Makefile. hermes-agent pins exact versions of its own
# dependencies, so it gets its own virtualenv instead of sharing .venv.

HERMES_AGENT_VERSION := 0.19.0
HERMES_VENV := .venv-hermes
HERMES_STAMP := $(HERMES_VENV)/.installed-$(HERMES_AGENT_VERSION)

.PHONY: hermes-venv

$(HERMES_STAMP):
	test -x $(HERMES_VENV)/bin/python || $(PYTHON) -m venv $(HERMES_VENV)
	$(HERMES_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	  hermes-agent==$(HERMES_AGENT_VERSION)
	touch $@

hermes-venv: $(HERMES_STAMP)  ## Create .venv-hermes with the pinned Hermes Agent (own venv).
