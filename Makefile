# The two commands a newcomer needs: `make demo` and `make test` (the fast tier, ≤ 10 min on 2 cores).
# `make test-slow` is the other tier: end-to-end Inductor compiles, corpora, whole models; CI runs both.
# `make test-all` adds the parametrizations marked `full` (every model, the whole corpus: an hour or more).
# Tests run in one pytest-xdist worker per core (JOBS=0: in this process); worksteal: a worker that
# finishes early takes pending tests from the other, so one long test at the end does not idle a core.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
JOBS ?= auto
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(JOBS) --dist worksteal

.PHONY: demo test test-slow test-all

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	# Pin torch first: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test,bench,hf]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/python -m bench demo

test: $(BIN)/.installed
	$(PYTEST) -m "not slow"

test-slow: $(BIN)/.installed
	$(PYTEST) -m "slow and not full"

test-all: $(BIN)/.installed
	$(PYTEST)
