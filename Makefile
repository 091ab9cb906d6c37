# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# openpi's own client (it pins numpy<2) in a virtualenv of its own: the interop tests run it
OPENPI_VENV := .venv-openpi
OPENPI_STAMP := $(OPENPI_VENV)/.installed
PYTEST_ARGS ?=
# the suite runs two workers a core (pytest-xdist; many tests wait on real-time servers and
# processes, so a second worker fills the wait), idle workers stealing tests from busy ones
TEST_JOBS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 2) )))

.PHONY: setup demo test test-quick lint typecheck bench clean system-deps

setup: $(STAMP) $(OPENPI_STAMP) system-deps

$(STAMP): setup.cfg pyproject.toml examples/harness-push/setup.cfg
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e examples/harness-push
	@touch $@

# (openpi-client 0.1.2 imports typing_extensions without declaring it)
$(OPENPI_STAMP):
	@test -x $(OPENPI_VENV)/bin/python || $(PYTHON) -m venv $(OPENPI_VENV)
	$(OPENPI_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	  openpi-client==0.1.2 typing_extensions
	@touch $@

# $(call need,CHECK,PACKAGE,WHAT,BREW): when the shell test CHECK fails, install the Debian
# package PACKAGE with apt when running as root; otherwise print the install commands (WHAT
# says what it is for; BREW is the Homebrew argument) and stop.
define need
	@$(1) || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing $(2) ($(3)) with apt-get"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null) \
	      || { echo "apt-get could not install $(2); install it by hand: apt-get install $(2)"; exit 1; }; \
	  else \
	    echo "$(2) is missing ($(3)). Install it, then run make again:"; \
	    echo "  Debian/Ubuntu: sudo apt-get install $(2)"; \
	    echo "  Fedora:        sudo dnf install $(2)"; \
	    echo "  macOS:         brew install $(4)"; \
	    exit 1; \
	  fi; }
endef

# Graphviz's `dot` renders execution graphs; Chromium (headless) tests the HTML replay; g++
# builds the loader that runs exported files in BehaviorTree.CPP (its conformance test).
system-deps:
	$(call need,command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1,chromium,the headless browser the replay page is tested in,--cask chromium)
	$(call need,command -v chromedriver >/dev/null 2>&1,chromium-driver,drives chromium in the replay page's tests,--cask chromedriver)
	$(call need,command -v dot >/dev/null 2>&1,graphviz,its dot draws execution graphs,graphviz)
	$(call need,command -v g++ >/dev/null 2>&1,g++,compiles the BehaviorTree.CPP conformance loader,gcc)

demo: setup
	$(BIN)/harness run trees/pick_and_place.yaml

test: setup
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist worksteal $(PYTEST_ARGS)

# the inner loop: every test but the end-to-end ones marked slow (CI runs them all: `make test`)
test-quick: setup
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist worksteal -m "not slow" $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check harness_bt skills runtime_bridge policies tests examples
	$(BIN)/mypy
	$(BIN)/mypy examples/harness-push/harness_push

bench: setup
	@for b in tests/benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(OPENPI_VENV) build *.egg-info
