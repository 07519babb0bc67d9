# The two commands of the quick start: `make run` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= localhost
PORT   ?= 9092
DATA   ?= ./data

.PHONY: run test lint typecheck layers unit docs docs-check bench fmt clean

# The stamp files re-run the install whenever pyproject.toml, setup.py or the source of a compiled module's package
# changes: the install compiles the per-request modules (`kafkalite.protocol.native.COMPILED_MODULES`) with mypyc,
# beside their sources (setup.py; when that fails they stay Python). An editable install leaves KafkaLite's own
# modules uncompiled to bytecode (pip byte-compiles only what it copies), so each stamp compiles them: the first
# `kafkalite serve` then starts as fast as every later one (Python
# recompiles any module edited since).
BUILD_INPUTS := pyproject.toml setup.py $(wildcard src/kafkalite/protocol/*.py src/kafkalite/protocol/records/*.py \
	src/kafkalite/storage/*.py src/kafkalite/broker/fetch_data.py src/kafkalite/broker/partition.py src/kafkalite/server/frame_stream.py \
	src/kafkalite/server/dispatch.py src/kafkalite/server/handlers/produce.py src/kafkalite/server/handlers/fetch.py \
	src/kafkalite/server/zero_copy.py)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BUILD_INPUTS) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m compileall -q src >/dev/null
	touch $@

$(VENV)/.installed-test: $(BUILD_INPUTS) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	$(BIN)/python -m compileall -q src >/dev/null
	touch $@

$(VENV)/.installed-bench: $(BUILD_INPUTS) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m compileall -q src >/dev/null
	touch $@

# The stream-processing app of tests/interop/test_quixstreams.py runs in a venv of its own (the `apps` extra):
# quixstreams caps confluent-kafka below the version the test extra needs. It compiles nothing: it is an editable
# install of the same src/, whose protocol extensions .venv's install built (or its Python source, when they are stale).
APPS_VENV := .venv-apps
$(APPS_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(APPS_VENV)
	KAFKALITE_COMPILE=0 $(APPS_VENV)/bin/python -m pip install --quiet -e '.[apps]'
	touch $@

run: $(VENV)/.installed
	$(BIN)/kafkalite serve --host $(HOST) --port $(PORT) --data-dir $(DATA)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench docs/hooks examples main.py setup.py
	$(BIN)/ruff format --check src tests bench docs/hooks examples main.py setup.py

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

layers: $(VENV)/.installed-test
	$(BIN)/lint-imports

# Every test runs on the build's form of the compiled modules (compiled where a C compiler was found); the protocol,
# storage, broker and server tests then run again on their pure-Python form, the fallback of a machine without one
# (all but the storage crash loops marked slow, which the first pass runs). Two test processes (pytest-xdist), each
# taking whole files so a module's fixtures start once: most tests wait on brokers, clients and kill -9 loops, and a
# single process left the two cores three quarters idle. `make unit TEST_PROCESSES=0` runs in one process.
TEST_PROCESSES ?= 2
PYTEST = $(BIN)/python -m pytest -q -n $(TEST_PROCESSES) --dist loadfile
unit: $(VENV)/.installed-test $(APPS_VENV)/.installed
	$(PYTEST)
	KAFKALITE_PURE_PYTHON=1 $(PYTEST) -m "not slow" tests/protocol tests/storage tests/broker tests/server

# The documentation site (mkdocs.yml): `make docs` builds it into site/; `make test` builds it strictly into a
# scratch directory, so a broken link, a bad reference or a stale generated table fails the suite.
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-check: $(VENV)/.installed-test
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir "$$tmp"

test: lint typecheck layers docs-check unit

bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench

fmt: $(VENV)/.installed-test
	$(BIN)/ruff format src tests bench docs/hooks examples main.py setup.py
	$(BIN)/ruff check --fix src tests bench docs/hooks examples main.py setup.py

clean:
	rm -rf $(VENV) $(APPS_VENV) build site *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
	find src -name '*.so' -delete
	rm -f src/kafkalite/protocol/_native.sources
