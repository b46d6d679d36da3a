# mnemo — two commands do all set-up: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCOMO ?= $(error give the LoCoMo file: LOCOMO=path/to/locomo10.json)

.PHONY: venv demo test test-fast lint typecheck bench-locomo bench-perf schema-snapshot clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU build of PyTorch first: any other spec pulls GBs of CUDA wheels.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/mnemo demo

test: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

# The unit tier only: pure logic, no PostgreSQL, no embedding model (seconds).
test-fast: $(STAMP)
	$(BIN)/pytest tests/unit

lint: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src tests examples benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

bench-locomo: $(STAMP)  # make bench-locomo LOCOMO=path/to/locomo10.json
	$(BIN)/mnemo bench locomo $(LOCOMO)

bench-perf: $(STAMP)  # make bench-perf LOCOMO=path/to/locomo10.json
	$(BIN)/mnemo bench perf --locomo $(LOCOMO)

schema-snapshot: $(STAMP)
	$(BIN)/python -m tests.schema_snapshot > tests/data/canonical_schema.txt

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
