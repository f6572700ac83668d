# The two commands a newcomer needs (see README.md):
#   make demo   set up, then run the main job on the embedded defaults
#   make test   set up, then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean-demo

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/distill demo

test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python bench/run_all.py
