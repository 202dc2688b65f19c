# FerryMQ developer commands. `make run` and `make test` work from a clean clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit clean system-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

## Run a broker on the embedded default store: STOMP on 127.0.0.1:61613, admin on 127.0.0.1:8161.
run: $(STAMP)
	$(BIN)/ferrymq broker --data ./data

## Install everything and run the whole suite: lint, types, tests.
test: system-deps $(STAMP) lint typecheck unit

## The tests start a throwaway PostgreSQL server: install Debian's when it is missing.
system-deps:
	@if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "installing PostgreSQL (Debian package postgresql) for the tests"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
