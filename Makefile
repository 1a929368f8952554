# Two commands do everything on a fresh machine: `make demo` and `make test`.
PY ?= python3
WORKSPACE ?= workspace
PER_CATEGORY ?= 5

.PHONY: setup demo test bench

setup:
	bash scripts/setup.sh

demo: setup
	$(PY) -m construction.pipeline --workspace $(WORKSPACE) --per-category $(PER_CATEGORY)

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) benchmarks/run_all.py
