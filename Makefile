# Public entry points: `make demo` and `make test` set up everything they need on a fresh
# machine with Python 3.11+, Java 17+ and Maven; `make bench` and `make lint` for developers.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?= --durations=30
DEMO_ARGS ?=
# Kafka 4.x is the default (aa.dev.artifacts.KAFKA_VERSION); the mesh, exactly-once and failover
# tests (marker kafka39) run a second time on the 3.9 line.
COMPAT_KAFKA ?= 3.9.2

.PHONY: demo test unit integration bench lint env fetch clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "aa needs Python 3.11+: set PYTHON=python3.11"'
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

env: $(STAMP)

fetch: env
	$(BIN)/aa dev fetch --spark
	$(BIN)/aa dev fetch --kafka-version $(COMPAT_KAFKA)

demo: fetch
	$(BIN)/python -m examples.demo $(DEMO_ARGS)

# Three pytest runs side by side, each with its own brokers, temp dir and log: the 4.x
# integration tests (in the foreground), the unit tests and the Kafka 3.9 subset (marker
# kafka39). Most of the integration time is waiting on brokers, so on 2 cores the other two fit
# in it. The background logs are printed when the foreground run ends; `make test` fails if
# any of the three fails.
test: fetch
	@side=$$(mktemp -d); \
	$(BIN)/python -m pytest -m unit -p no:cacheprovider --basetemp=$$side/unit-tmp \
		$(PYTEST_ARGS) >$$side/unit.log 2>&1 & unit=$$!; \
	AA_KAFKA_VERSION=$(COMPAT_KAFKA) $(BIN)/python -m pytest -m kafka39 -p no:cacheprovider \
		--basetemp=$$side/compat-tmp $(PYTEST_ARGS) >$$side/compat.log 2>&1 & compat=$$!; \
	$(BIN)/python -m pytest -m "not unit" $(PYTEST_ARGS); main=$$?; \
	wait $$unit; u=$$?; wait $$compat; c=$$?; \
	echo "==== unit tests (ran alongside; exit $$u) ===="; cat $$side/unit.log; \
	echo "==== Kafka $(COMPAT_KAFKA): tests marked kafka39 (ran alongside; exit $$c) ===="; \
	cat $$side/compat.log; rm -rf $$side; \
	test $$main -eq 0 && test $$u -eq 0 && test $$c -eq 0

unit: env
	$(BIN)/python -m pytest -m unit $(PYTEST_ARGS)

integration: fetch
	$(BIN)/python -m pytest -m integration $(PYTEST_ARGS)

bench: fetch
	$(BIN)/python -m bench.run

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
