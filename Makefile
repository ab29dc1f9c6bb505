# Two commands for a newcomer: `make demo` and `make test`. Both set themselves up first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.bench

.PHONY: demo test suite test-fast lint notebook-cells bytecode format lab bench screenshot clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: no python3.11 or python3 on PATH" >&2; exit 2; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

demo: bytecode
	$(BIN)/python -m toolkit.demo

# The toolkit's modules compiled once, for every process the demo, the suite and the benchmarks
# start (commands, notebook kernels, sandboxes): where Python may not write its cache
# (PYTHONDONTWRITEBYTECODE, set on some machines), each compiled them again (0.2 s of the 0.9 s a
# reconciliation command took to import its modules).
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -j0 toolkit tests

LINTED := toolkit tests benchmarks scripts notebooks

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy

# The whole suite with a coverage report of toolkit/ (the floor is fail_under in pyproject.toml),
# a worker per core (PYTEST_WORKERS=0 runs it in this one process), and its 20 slowest steps:
# where the suite's time goes, in every CI log.
PYTEST_WORKERS ?= auto
PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal

suite: bytecode
	$(BIN)/pytest $(PARALLEL) --cov --cov-report=term-missing:skip-covered --durations=20

# Lint, the notebooks' cells (nbval) and the suite run side by side, their outputs line by line (the
# suite's progress as it goes): the cores stay busy throughout, where lint and nbval alone left one
# idle for a third of their time (mypy 33 s, nbval 24 s) before the suite started. The bytecode is
# compiled once, before nbval and the suite.
test: $(STAMP)
	$(MAKE) --no-print-directory --jobs=3 --output-sync=line lint notebook-cells suite

# The committed notebooks cell by cell, in file order, on a fresh embedded sandbox.
notebook-cells: bytecode
	env -u TOOLKIT_BASE_URL -u TOOLKIT_API_KEY TOOLKIT_HOME=$$(mktemp -d) $(BIN)/pytest -p nbval --nbval-lax -p no:cacheprovider notebooks/

# The inner loop: the suite without the slow tests (crash, concurrency, schemathesis, notebooks).
test-fast: bytecode
	$(BIN)/pytest $(PARALLEL) -m "not slow"

format: $(STAMP)
	$(BIN)/ruff format $(LINTED)
	$(BIN)/ruff check --fix $(LINTED)

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

# The benchmarks' own dependencies (the `bench` extra: datacompy, psutil), installed on first use.
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) bytecode
	$(BIN)/python benchmarks/client_throughput.py
	$(BIN)/python benchmarks/sandbox_throughput.py
	$(BIN)/python benchmarks/qr_codes.py
	$(BIN)/python benchmarks/frames.py
	$(BIN)/python benchmarks/reconcile.py --rows 1000
	$(BIN)/python benchmarks/reconcile.py --rows 100000
	$(BIN)/python benchmarks/reconcile.py
	$(BIN)/python benchmarks/light_commands.py
	$(BIN)/python benchmarks/notebook_run.py
	$(BIN)/python benchmarks/payouts.py
	$(BIN)/python benchmarks/spark_transpile.py
	$(BIN)/python benchmarks/workbook_writers.py

screenshot: $(STAMP)
	$(BIN)/python scripts/report_screenshot.py

clean:
	rm -rf $(VENV) .toolkit .mypy_cache .ruff_cache .pytest_cache .coverage
