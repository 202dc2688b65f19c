# FerryMQ developer commands. `make run` and `make test` work from a clean clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One venv, two stamps: `make run` installs the base package only (broker, CLI, client), `make
# test` adds the `dev` extra (test tools and Spark) on top; either may come first.
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run test lint typecheck unit clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $(RUN_STAMP)

## Run a broker on the embedded default store: STOMP on 127.0.0.1:61613, AMQP 1.0 on
## 127.0.0.1:5672, admin on 127.0.0.1:8161.
run: $(RUN_STAMP)
	$(BIN)/ferrymq broker --data ./data --listen stomp://127.0.0.1:61613 --listen amqp://127.0.0.1:5672

## Install everything and run the whole suite: lint, types, tests.
test: system-deps $(STAMP) lint typecheck unit

## The tests start a throwaway PostgreSQL server, an ActiveMQ broker (multicast discovery
## interoperability), Spark (Java 17) and PHP's PECL stomp client (interoperability): install
## Debian's packages for what is missing. stomp.js (npm, tests/websocket/node) runs under Node
## and in headless Chromium (chromium, chromium-driver); the tests `npm ci` it themselves, and
## rhea (npm, tests/amqp/node). RabbitMQ's AMQP 1.0 shovel is a third-party AMQP client.
system-deps:
	@missing=""; \
	if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		missing="$$missing postgresql"; \
	fi; \
	if [ ! -e /usr/share/activemq/bin/activemq.jar ]; then missing="$$missing activemq"; fi; \
	if ! command -v java >/dev/null 2>&1; then missing="$$missing openjdk-17-jre-headless"; fi; \
	if ! php -m 2>/dev/null | grep -qix stomp; then missing="$$missing php-cli php-stomp"; fi; \
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
		missing="$$missing nodejs npm"; \
	fi; \
	if [ ! -x /usr/bin/chromium ]; then missing="$$missing chromium"; fi; \
	if [ ! -x /usr/bin/chromedriver ]; then missing="$$missing chromium-driver"; fi; \
	if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then missing="$$missing rabbitmq-server"; fi; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages for the tests:$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(STAMP)
	$(BIN)/mypy

## Two pytest-xdist workers (the machine's two cores; TEST_WORKERS=0 runs in this process), a
## test file per worker at a time: module fixtures start once and a file's tests keep its order.
TEST_WORKERS ?= 2
unit: $(STAMP)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache .hypothesis
