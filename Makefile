# The two commands of the quick start: `make run` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= localhost
PORT   ?= 9092
DATA   ?= ./data

.PHONY: run test lint typecheck layers unit bench fmt clean

# The stamp files re-run the install whenever pyproject.toml changes.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/kafkalite serve --host $(HOST) --port $(PORT) --data-dir $(DATA)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench main.py
	$(BIN)/ruff format --check src tests bench main.py

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

layers: $(VENV)/.installed-test
	$(BIN)/lint-imports

unit: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

test: lint typecheck layers unit

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench

fmt: $(VENV)/.installed-test
	$(BIN)/ruff format src tests bench main.py
	$(BIN)/ruff check --fix src tests bench main.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
