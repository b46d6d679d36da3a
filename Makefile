# mnemo — two commands do all set-up: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCOMO ?= $(error give the LoCoMo file: LOCOMO=path/to/locomo10.json)

.PHONY: venv demo test wheel-check browser test-fast lint typecheck docs docs-build bench-locomo bench-perf schema-snapshot clean

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

test: $(STAMP) browser
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/mypy
	$(BIN)/pytest

# The wheel stands alone: built, installed into a clean virtualenv outside the checkout (torch
# first, then the wheel and its dependencies from the registries), `mnemo quickstart` run there.
wheel-check: $(STAMP)
	PY=$(CURDIR)/$(BIN)/python BASE_PY=$(PY) .ci/wheel-check

# The inspector's browser tests drive Debian's chromium: installed here when we may (root);
# otherwise they fail, saying how to install it.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; \
	  else echo "*** chromium is not installed and this is not root: install it (apt-get install -y --no-install-recommends chromium) or the browser tests fail ***"; fi; }

# The unit tier only: pure logic, no PostgreSQL, no embedding model (seconds).
test-fast: $(STAMP)
	$(BIN)/pytest tests/unit

lint: $(STAMP)
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src tests examples benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# The documentation site (mkdocs.yml, docs/): served at http://127.0.0.1:8000 while you edit, or
# built into site/; the test run builds it with --strict and runs every code block of its pages.
docs: $(STAMP)
	$(BIN)/mkdocs serve

docs-build: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

bench-locomo: $(STAMP)  # make bench-locomo LOCOMO=path/to/locomo10.json
	$(BIN)/mnemo bench locomo $(LOCOMO)

bench-perf: $(STAMP)  # make bench-perf LOCOMO=path/to/locomo10.json
	$(BIN)/mnemo bench perf --locomo $(LOCOMO)

schema-snapshot: $(STAMP)
	$(BIN)/python -m tests.schema_snapshot > tests/data/canonical_schema.txt

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
