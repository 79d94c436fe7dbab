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

# Two sessions run alongside the 4.x suite, each with its own brokers, temp dir and log (printed
# after the 4.x run; `make test` fails if any fails): the 3.9 subset, and SIDE_TESTS, the longest
# 4.x tests that mostly wait (a broker restart, outages, Spark starting) and the reconcile jobs.
# On 2 cores the 4.x session kept the CPU busy 68% of its time, so the waits overlap instead of
# adding up; the two others ended ~13 minutes before it, so the reconcile jobs (~170 s) run
# beside it too.
SIDE_TESTS ?= tests/integration/examples tests/integration/aa/test_drill_convergence.py \
	tests/integration/spark_reconcile
test: fetch
	@side_tmp=$$(mktemp -d); \
	AA_KAFKA_VERSION=$(COMPAT_KAFKA) $(BIN)/python -m pytest -m kafka39 -p no:cacheprovider \
		--basetemp=$$side_tmp/compat $(PYTEST_ARGS) >$$side_tmp/compat.log 2>&1 & compat=$$!; \
	$(BIN)/python -m pytest $(SIDE_TESTS) -p no:cacheprovider --basetemp=$$side_tmp/side \
		$(PYTEST_ARGS) >$$side_tmp/side.log 2>&1 & side=$$!; \
	$(BIN)/python -m pytest $(PYTEST_ARGS) $(addprefix --ignore=,$(SIDE_TESTS)); main=$$?; \
	wait $$compat; old=$$?; wait $$side; long=$$?; \
	echo "==== Kafka $(COMPAT_KAFKA): tests marked kafka39 (ran alongside; exit $$old) ===="; \
	cat $$side_tmp/compat.log; \
	echo "==== Kafka 4.x: $(SIDE_TESTS) (ran alongside; exit $$long) ===="; \
	cat $$side_tmp/side.log; rm -rf $$side_tmp; \
	test $$main -eq 0 && test $$old -eq 0 && test $$long -eq 0

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
