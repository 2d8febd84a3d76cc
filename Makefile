# The two commands a newcomer needs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test

$(BIN)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	# Pin torch first: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test,bench,hf]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/python -m bench demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m "not slow" -p no:cacheprovider
