# Every target sets itself up: `setup` creates .venv and installs the project (editable, with the
# dev extra) once; the stamp file makes it idempotent and is refreshed when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1

.PHONY: setup bench test test-slow perf lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
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
