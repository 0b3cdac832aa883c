# Two commands on a fresh machine with Python 3.11 and git:
#   make demo   install, run the demo pilots, print their table
#   make test   install, then ruff, mypy, the floors (lint-imports), the docs and pytest
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test lint docs bench clean

# Not byte-compiled at install: libraries' own test suites, Ray's libraries that benchkit
# never imports (RLlib, Tune, Train, Serve, Data, LLM, AIR) and mypy's sources beside its
# compiled modules: 40% of the .py files' bytes, 5 s of the 15 s that compiling all took
UNCOMPILED := /(tests?|ray/(rllib|tune|train|serve|data|llm|air)|mypyc?)/

$(STAMP): pyproject.toml
	@# bubblewrap, the pilots' sandbox: installed where this runs as root with apt-get
	@-sh tools/bubblewrap.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	@# uv, one of benchkit's own dependencies, installs the rest: in seconds, where pip
	@# took most of a minute. It comes from the system's pip when that can install into
	@# the venv (pip 22.3 and later), else from the venv's own pip, made by ensurepip
	@test -x $(BIN)/uv \
		|| $(PYTHON) -m pip --python $(BIN)/python install --quiet --disable-pip-version-check 'uv>=0.5' 2>/dev/null \
		|| { $(BIN)/python -m ensurepip --default-pip > /dev/null \
			&& $(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv>=0.5'; }
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	@# byte-compiled now, the libraries and benchkit alike (uv's --compile-bytecode takes
	@# every file; compileall took twice tools/bytecode.py's time): with
	@# PYTHONDONTWRITEBYTECODE set, every start would compile what it imports, again. A file
	@# left out, or one that does not compile (said above), is compiled where it is
	@# imported, as without this
	$(BIN)/python tools/bytecode.py '$(UNCOMPILED)' $(VENV)/lib benchkit \
		|| echo "make install: some files were not byte-compiled (above); all else is done"
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
