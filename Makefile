# The two commands a newcomer needs (see README.md):
#   make demo   set up, then run a small closed loop (2 generations) on the embedded defaults
#   make test   set up, then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The lab machines keep the CPU wheel of torch on disk; use it when present.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)
DEMO_HOME ?= datasets

.PHONY: setup java demo test lint docs bench bench-studies notebooks clean-demo chromium serve

# setup.py builds the one compiled part (the rules' loops in C): a change to it rebuilds the install.
$(STAMP): pyproject.toml constraints.txt setup.py toolkit/game/_rules.c
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(FIND_LINKS) -c constraints.txt -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP) java

# The Java engine library and its demo engine (clients/java), compiled by the JDK's javac alone (no downloads).
java:
	bash clients/java/build.sh

demo: $(STAMP)
	rm -rf $(DEMO_HOME)/runs/demo
	$(BIN)/distill --home $(DEMO_HOME) loop run --name demo

# The suite on every core (at most 4): pytest-xdist's workers, each given whole test files, so a file's module
# fixtures are built once. `make test TEST_WORKERS=0` runs it in this one process. Its 30 slowest steps (a test's
# setup, call or teardown) are listed at the end: where the suite's time goes, in every CI log.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n < 4 ? n : 4 )))

test: $(STAMP) java chromium lint docs
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=30

# The documentation site into site/: its generated pages first (home from README.md, the CLI and contract
# references), then MkDocs with --strict, so a broken link, a missing page or a bad nav entry fails.
docs: $(STAMP)
	$(BIN)/python docs/gen_pages.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Habits: ruff's lint (pycodestyle, pyflakes, import order) and format check, and the import layers.
lint: $(STAMP)
	$(BIN)/ruff check toolkit tests bench notebooks docs setup.py
	$(BIN)/ruff format --check toolkit tests bench notebooks docs setup.py
	$(BIN)/lint-imports

# The dashboard's browser tests drive Debian's Chromium (never a downloaded browser); install it when missing.
CHROMIUM ?= /usr/bin/chromium
APT := $(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get
chromium:
	@test -x $(CHROMIUM) || $(APT) install -y -q chromium >/dev/null || \
		($(APT) update -q >/dev/null && $(APT) install -y -q chromium >/dev/null) || \
		(echo "error: the browser tests need Chromium at $(CHROMIUM): install Debian's chromium package" >&2; exit 1)
	@test -x $(CHROMIUM) || (echo "error: no Chromium at $(CHROMIUM) after installing it" >&2; exit 1)

# The dashboard over the demo's data root: http://127.0.0.1:8765/ (run `make demo` first, or start a loop from it).
serve: $(STAMP)
	$(BIN)/distill --home $(DEMO_HOME) serve

# Static reports of the demo's lake, dataset and loop run under $(DEMO_HOME)/reports/notebooks/ (run `make demo` first).
notebooks: $(STAMP)
	$(BIN)/python notebooks/lake.py -- --home $(DEMO_HOME) --report
	$(BIN)/python notebooks/dataset.py -- --home $(DEMO_HOME) --name loop-demo --report
	$(BIN)/python notebooks/loop.py -- --home $(DEMO_HOME) --name demo --report

# Every stage's speed and memory benchmark, then one table of every target they judged (bench/summary.py).
BENCH_STAGES = game ingest build lake check labels train scale hostile ablate
# The studies: does the loop keep learning (about an hour), does cleaning labels help.
BENCH_STUDIES = learning cleaning
VERDICTS = $(CURDIR)/bench/out/verdicts.jsonl

bench: $(STAMP)
	rm -f $(VERDICTS)
	for name in $(BENCH_STAGES); do DISTILL_BENCH_VERDICTS=$(VERDICTS) $(BIN)/python bench/bench_$$name.py || exit 1; done
	$(BIN)/python bench/summary.py $(VERDICTS)

bench-studies: $(STAMP)
	rm -f $(VERDICTS)
	for name in $(BENCH_STUDIES); do DISTILL_BENCH_VERDICTS=$(VERDICTS) $(BIN)/python bench/bench_$$name.py || exit 1; done
	$(BIN)/python bench/summary.py $(VERDICTS)
