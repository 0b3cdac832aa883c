# Two commands on a fresh machine with Python 3.11 and git:
#   make demo   install, run the demo pilots, print their table
#   make test   install, then ruff, mypy, the floors (lint-imports), the docs and pytest
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint docs bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# uv, one of benchkit's own dependencies, installs the rest: in seconds, where pip
	@# took most of a minute. Byte-compiled now, the libraries and benchkit alike: with
	@# PYTHONDONTWRITEBYTECODE set, every start would compile what it imports, again
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv>=0.5'
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]'
	$(BIN)/python -m compileall -q benchkit
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/benchkit pilot --bench demo --arm human --arm noop --arm replay:agent-a \
		--arm replay:agent-b --arm fake-agent --max-cost 0.50

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# three workers on the two cores (pytest waits on its subprocesses a tenth of the time with
# two), a file's tests on one worker (a notebook's cells share one kernel, a module
# fixture is made once); the files of the longest tests first, in the order
# tests/conftest.py gives them (xdist would hand them out by their count of tests).
# lint and docs run beside pytest: their output comes after pytest's, and either failing
# fails make test
test: $(STAMP)
	@$(MAKE) --no-print-directory lint docs > $(VENV)/lint.log 2>&1 & lint=$$!; \
	$(BIN)/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=15; \
	tests=$$?; wait $$lint; linted=$$?; cat $(VENV)/lint.log; \
	test $$linted -eq 0 || echo "make test: lint or docs failed (above)"; \
	test $$tests -eq 0 && test $$linted -eq 0

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py

clean:
	rm -rf $(VENV) data/runs site .pytest_cache .mypy_cache .ruff_cache
