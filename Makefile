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

.PHONY: demo test unit integration bench lint env fetch sysdeps clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "aa needs Python 3.11+: set PYTHON=python3.11"'
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml aa/mirror/_restamp.c scripts/system-packages.txt | $(BIN)/python
	@bash scripts/sysdeps
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@$(BIN)/python -m pip install --quiet -e '.[kerberos]' || echo "env: the gssapi package \
	could not be built (it needs libkrb5-dev and a C compiler): the Kerberos tests will skip"
	@touch $(STAMP)

env: $(STAMP)

# Debian packages some tests need (real peers: kcat, ...), listed in scripts/system-packages.txt
sysdeps:
	@bash scripts/sysdeps

fetch: env
	$(BIN)/aa dev fetch --spark --registry
	$(BIN)/aa dev fetch --kafka-version $(COMPAT_KAFKA)

demo: fetch
	$(BIN)/python -m examples.demo $(DEMO_ARGS)

# Two sessions run alongside the 4.x suite, each with its own brokers, temp dir and log (printed
# after the 4.x run; `make test` fails if any fails): the 3.9 subset followed by LATE_TESTS, and
# SIDE_TESTS, the longest 4.x tests that mostly wait (a broker restart, outages, Spark starting)
# and the reconcile jobs (with the Spark unit tests: one Spark session serves both). On 2 cores
# the 4.x session kept the CPU busy 68% of its time, so the waits overlap instead of adding up.
# The 3.9 subset ends first (~280 s of ~1,000), so the fault drills and the SASL/TLS clusters'
# test (~330 s, mostly waiting for kills, restarts and brokers) follow it on their own brokers.
SIDE_TESTS ?= tests/integration/examples tests/integration/aa/test_drill_convergence.py \
	tests/integration/spark_reconcile tests/unit/spark_reconcile
LATE_TESTS ?= tests/integration/aa/test_drills.py tests/integration/aa/test_security.py \
	tests/integration/aa/test_security_tls.py tests/integration/aa/test_security_oauth.py \
	tests/integration/aa/test_security_kerberos.py tests/integration/aa/test_security_msk.py \
	tests/integration/aa/test_coordinator_unavailable.py
test: fetch sysdeps
	@side_tmp=$$(mktemp -d); \
	( AA_KAFKA_VERSION=$(COMPAT_KAFKA) $(BIN)/python -m pytest -m kafka39 -p no:cacheprovider \
		--basetemp=$$side_tmp/compat $(PYTEST_ARGS) >$$side_tmp/compat.log 2>&1; c=$$?; \
	  $(BIN)/python -m pytest $(LATE_TESTS) -p no:cacheprovider --basetemp=$$side_tmp/late \
		$(PYTEST_ARGS) >$$side_tmp/late.log 2>&1; l=$$?; \
	  echo "compat=$$c late=$$l" >$$side_tmp/compat.rc; test $$c -eq 0 && test $$l -eq 0 ) & compat=$$!; \
	$(BIN)/python -m pytest $(SIDE_TESTS) -p no:cacheprovider --basetemp=$$side_tmp/side \
		$(PYTEST_ARGS) >$$side_tmp/side.log 2>&1 & side=$$!; \
	$(BIN)/python -m pytest $(PYTEST_ARGS) $(addprefix --ignore=,$(SIDE_TESTS) $(LATE_TESTS)); main=$$?; \
	wait $$compat; old=$$?; wait $$side; long=$$?; \
	echo "==== Kafka $(COMPAT_KAFKA): tests marked kafka39 (ran alongside; $$(cat $$side_tmp/compat.rc)) ===="; \
	cat $$side_tmp/compat.log; \
	echo "==== Kafka 4.x: $(LATE_TESTS) (ran alongside, after the 3.9 subset) ===="; \
	cat $$side_tmp/late.log; \
	echo "==== Kafka 4.x: $(SIDE_TESTS) (ran alongside; exit $$long) ===="; \
	cat $$side_tmp/side.log; rm -rf $$side_tmp; \
	test $$main -eq 0 && test $$old -eq 0 && test $$long -eq 0

unit: env
	$(BIN)/python -m pytest -m unit $(PYTEST_ARGS)

integration: fetch sysdeps
	$(BIN)/python -m pytest -m integration $(PYTEST_ARGS)

bench: fetch
	$(BIN)/python -m bench.run

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
