# Headless Chromium for the browser tests of the /ui/ pages: included from the main Makefile
# (`include tests/ui/ui.mk`). tests/ui drives Debian's own `chromium` package with Playwright for
# Python (from requirements/dev.lock); Playwright never downloads a browser here. When the package
# is missing this target says so and installs it with apt-get (as root, or through sudo).

CHROMIUM ?= /usr/bin/chromium

.PHONY: chromium ui-test

chromium:  ## Install Debian's chromium package for tests/ui when it is missing.
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  echo "tests/ui needs headless Chromium: installing Debian's 'chromium' package with apt-get"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium; \
	fi

ui-test: $(STAMP) chromium  ## The preview and Memory pages in headless Chromium (Playwright).
	POWERCONTEXT_TEST_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q tests/ui
