# Every target sets itself up: `setup` creates .venv and installs the project (editable, with the
# dev extra) once, pinned by constraints.txt; the stamp file makes it idempotent and is refreshed when
# pyproject.toml or constraints.txt change.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1

.PHONY: setup bench test test-slow perf lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

bench: setup
	$(BIN)/compaction-bench run --name bench

test: setup
	$(BIN)/python -m pytest -q -n 2 -m "not slow"

test-slow: setup
	$(BIN)/python -m pytest -q -n 2

perf: setup
	$(BIN)/python -m bench.perf

lint: setup
	$(BIN)/ruff check bench strategies traces reports tests

clean:
	rm -rf $(VENV) out .pytest_cache
