# Every target sets itself up: `setup` creates .venv and installs the project (editable, with the
# dev extra) once, pinned by constraints.txt; the stamp file makes it idempotent and is refreshed when
# pyproject.toml or constraints.txt change.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The hot replay checks compiled with mypyc (bench/cli/native.py), rebuilt when a source changes; never
# fails: without a C compiler or on a compile error it says so in one line and the bench runs as pure
# Python, with the same results. COMPACTION_BENCH_PURE=1 runs pure Python anyway; `make native` rebuilds.
NATIVE := build/native/manifest.json
NATIVE_SOURCES := $(wildcard bench/*.py bench/*/*.py strategies/*.py strategies/*/*.py traces/*.py)
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1

.PHONY: setup native bench bench-real tune test test-slow perf perf-scale perf-scale-estimate fuzz lint clean

setup: $(STAMP) $(NATIVE)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

$(NATIVE): $(STAMP) $(NATIVE_SOURCES)
	$(BIN)/python -m bench.cli.native
native: $(STAMP)
	$(BIN)/python -m bench.cli.native

bench: setup
	$(BIN)/compaction-bench run --name bench --seeds 3

# Every real session in ../shared/traces (when it is there) through every strategy, with fidelity.
bench-real: setup
	$(BIN)/compaction-bench run --traces ../shared/traces --model recorded --name real

# Thresholds chosen on half the sessions and scored on the other half (bench/run/tune.py): each strategy's
# declared grid, or the values `|` lists; override with make tune TUNE="codex 'observation-masking@n=4|8'".
TUNE ?= codex anthropic-clear-tool-uses observation-masking
tune: setup
	$(BIN)/compaction-bench tune --seeds 4 --strategies $(TUNE)

test: setup
	$(BIN)/python -m pytest -q -n 2 -m "not slow"

test-slow: setup
	$(BIN)/python -m pytest -q -n 2

perf: setup
	$(BIN)/python -m bench.cli.perf

# Throughput and memory at scale (not a test): SCALE sessions of real size (the length deciles of
# ../shared/traces) x 8 strategies, on the process pool and a local Ray instance side by side.
# `make perf-scale-estimate` times SCALE_ESTIMATE sessions first and predicts the SCALE run's time.
SCALE ?= 10000
SCALE_ESTIMATE ?= 100
perf-scale: setup
	$(BIN)/python -m bench.cli.perf_scale --traces $(SCALE)
perf-scale-estimate: setup
	$(BIN)/python -m bench.cli.perf_scale --estimate $(SCALE_ESTIMATE) --traces $(SCALE)

# Every registered importer fed FUZZ_VARIANTS mutated files (seeded from ../shared/traces when there, else
# from our fixtures), each read, written natively and replayed; fails on a crash, hang or unnamed error.
FUZZ_VARIANTS ?= 2000
FUZZ_SEED ?= 0
fuzz: setup
	$(BIN)/python -m tests.traces.fuzz_campaign --variants $(FUZZ_VARIANTS) --seed $(FUZZ_SEED)

lint: setup
	$(BIN)/ruff check bench strategies traces reports tests

clean:
	rm -rf $(VENV) out .pytest_cache build/native build/native.log
