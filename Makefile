# Two commands do everything on a fresh machine: `make demo` and `make test`. Both run from the clone's
# root and use this checkout's own venv (.venv, made by `make setup`).
VENV ?= .venv
PY = $(VENV)/bin/python
WORKSPACE ?= workspace
PER_CATEGORY ?= 5

.PHONY: setup demo test test-quick

setup:
	AOR_VENV=$(VENV) bash scripts/setup.sh

# the automatic build, scripted labels through a real Label Studio, agreement, and a release folder
demo: setup
	WORKSPACE=$(WORKSPACE) PER_CATEGORY=$(PER_CATEGORY) PYTHON=$(PY) bash scripts/demo.sh

# two workers (the machine's two cores), whole modules each: one Label Studio server per worker, shared by
# its modules (tests/conftest.py)
test: setup
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=15 tests

# for iteration: no servers, journeys, harness venvs, models or builds (tests marked slow in tests/conftest.py);
# CI and `make test` run the whole suite
test-quick:
	$(PY) -m pytest -q -n 2 --dist loadfile -m "not slow" --durations=10 tests
