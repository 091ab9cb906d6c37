# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: setup demo test lint typecheck bench clean system-deps

setup: $(STAMP) system-deps

$(STAMP): setup.cfg pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

# Graphviz's `dot` renders execution graphs; Chromium (headless) tests the HTML replay.
# Installed with apt when missing and running as root; otherwise the exact install command is
# printed.
system-deps:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Chromium (headless browser for the replay page's test) with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || { echo "apt-get could not install chromium; install it by hand: apt-get install chromium"; exit 1; }; \
	  else \
	    echo "Chromium is missing (the HTML replay is tested in it). Install it, then run make again:"; \
	    echo "  Debian/Ubuntu: sudo apt-get install chromium"; \
	    echo "  Fedora:        sudo dnf install chromium"; \
	    echo "  macOS:         brew install --cask chromium"; \
	    exit 1; \
	  fi; }
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Graphviz (dot) with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) \
	      || { echo "apt-get could not install graphviz; install it by hand: apt-get install graphviz"; exit 1; }; \
	  else \
	    echo "Graphviz's 'dot' is missing. Install it, then run make again:"; \
	    echo "  Debian/Ubuntu: sudo apt-get install graphviz"; \
	    echo "  Fedora:        sudo dnf install graphviz"; \
	    echo "  macOS:         brew install graphviz"; \
	    exit 1; \
	  fi; }

demo: setup
	$(BIN)/harness run trees/pick_and_place.yaml

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check harness_bt skills runtime_bridge tests
	$(BIN)/mypy

bench: setup
	@for b in tests/benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
