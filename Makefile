# Every target sets up .venv by itself; nothing relies on what was installed by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/placed plan examples/ironic-affinity.yaml

# tests/test_console.py drives Debian's Chromium with Playwright (no browser download).
chromium:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

# The tests run in TEST_WORKERS processes (pytest-xdist), each test file whole in one of
# them (its module fixtures made once): half of a serial run's time on two cores. Each
# test makes its own databases, files and ports, so the processes never share one.
TEST_WORKERS ?= 2

test: $(STAMP) chromium
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache .mypy_cache
