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

$(STAMP): pyproject.toml aa/mirror/_restamp.c | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

env: $(STAMP)

fetch: env
	$(BIN)/aa dev fetch --spark
	$(BIN)/aa dev fetch --kafka-version $(COMPAT_KAFKA)

demo: fetch
	$(BIN)/python -m examples.demo $(DEMO_ARGS)

# The 3.9 subset runs alongside the 4.x suite (its own brokers, temp dir and log; most of both
# is waiting on brokers, so running them side by side saves its whole length on 2 cores); its
# log is printed after the 4.x run, and `make test` fails if either fails.
test: fetch
	@compat_tmp=$$(mktemp -d); \
	AA_KAFKA_VERSION=$(COMPAT_KAFKA) $(BIN)/python -m pytest -m kafka39 -p no:cacheprovider \
		--basetemp=$$compat_tmp/tmp $(PYTEST_ARGS) >$$compat_tmp/log 2>&1 & compat=$$!; \
	$(BIN)/python -m pytest $(PYTEST_ARGS); main=$$?; \
	wait $$compat; old=$$?; \
	echo "==== Kafka $(COMPAT_KAFKA): tests marked kafka39 (ran alongside; exit $$old) ===="; \
	cat $$compat_tmp/log; rm -rf $$compat_tmp; \
	test $$main -eq 0 && test $$old -eq 0

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
