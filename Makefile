# The two commands a newcomer needs (see README.md):
#   make demo   set up, then run the main job on the embedded defaults
#   make test   set up, then run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The lab machines keep the CPU wheel of torch on disk; use it when present.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)
DEMO_HOME ?= datasets

.PHONY: setup demo test bench clean-demo

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(FIND_LINKS) -c constraints.txt -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	rm -rf $(DEMO_HOME)/demo-logs
	$(BIN)/distill --home $(DEMO_HOME) simulate --games 400 --players heuristic,heuristic,heuristic,random \
		--seed 7 --out $(DEMO_HOME)/demo-logs
	$(BIN)/distill validate $(DEMO_HOME)/demo-logs
	$(BIN)/distill --home $(DEMO_HOME) ingest $(DEMO_HOME)/demo-logs
	$(BIN)/distill --home $(DEMO_HOME) sql "SELECT source AS player, count(DISTINCT game_id) AS games, count(*) AS decisions, \
		round(avg(CASE WHEN is_terminal OR truncated THEN seat_won::INT END), 3) AS win_rate FROM decisions GROUP BY ALL ORDER BY 1"
	$(BIN)/distill --home $(DEMO_HOME) sql "SELECT count(*) AS games, round(avg(turns), 1) AS turns, \
		round(avg(decisions), 1) AS decisions, sum(timed_out::INT) AS timeouts FROM games"
	$(BIN)/distill --home $(DEMO_HOME) sql "SELECT action.macro AS action, count(*) AS n, \
		round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct FROM decisions GROUP BY ALL ORDER BY n DESC"

test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/lint-imports

bench: $(STAMP)
	for script in bench/bench_*.py; do $(BIN)/python $$script || exit 1; done
