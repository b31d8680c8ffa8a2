# dbrouter: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
# fakesnow (the Snowflake emulator of the Snowflake tests) pins sqlglot~=30.22, older than the
# project's, and works only with snowflake-connector-python 4.x: it gets its own virtualenv and
# runs as a server there (tests/fakesnow_server.py).
FAKESNOW_VENV := .venv-fakesnow
BIN := $(VENV)/bin
WAREHOUSE ?= .dbrouter/demo.duckdb
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo test lint clean browser clients

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first: the CPU wheel 2.13.0 is on the machine; installing it before
# sentence-transformers keeps pip from resolving the CUDA build. The editable install compiles
# nothing: compileall writes dbrouter's bytecode as a wheel install would, so a cold `dbrouter
# route` does not compile its ~50 modules on every run where PYTHONDONTWRITEBYTECODE is set (45 ms
# of CPU; Python still recompiles, in memory, a module edited since).
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,snowflake]'
	$(BIN)/python -m compileall -q dbrouter python_udfs
	touch $@

$(FAKESNOW_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(FAKESNOW_VENV)
	$(FAKESNOW_VENV)/bin/pip install --quiet 'fakesnow[server]==0.12.1' 'snowflake-connector-python==4.8.0'
	touch $@

setup: $(VENV)/.installed $(FAKESNOW_VENV)/.installed

# Main job: build the knowledge base over the shipped demo databases, then route questions.
demo: setup
	$(BIN)/dbrouter build --sources demo/sources.yml --warehouse $(WAREHOUSE)
	$(BIN)/dbrouter route --warehouse $(WAREHOUSE) --k 3 \
		"How many singers do we have?" \
		"Which courses does the history department offer?" \
		"List the products that cost more than 100 dollars" \
		"Which orchestra has the most performances?"

# Two workers, one test module each at a time (--dist loadfile): a module's shared fixtures (a built
# KB, a PostgreSQL server) are made once, and most of a test's time is single-threaded dbt and
# Python start-up, so two run side by side on two cores.
# `dbrouter report`'s HTML page is checked in a real headless browser: Debian's chromium package
# (as root, or through passwordless sudo; the package lists are refreshed only when the install
# cannot find it).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo "sudo -n" ); \
		$$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || \
		{ $$SUDO apt-get update -q >/dev/null 2>&1 && $$SUDO apt-get install -y -q chromium >/dev/null 2>&1; } || \
		{ echo "make: the tests need Debian's chromium and it could not be installed: run apt-get install chromium" >&2; exit 1; }; }

# The BI-client tests speak to `dbrouter serve` through pgjdbc, the driver DBeaver, Metabase, Tableau
# and DataGrip bundle: Debian's libpostgresql-jdbc-java and a JDK to run the small probe program
# (tests/clients/JdbcProbe.java), installed as chromium is.
JDBC_JAR := /usr/share/java/postgresql.jar
clients:
	@{ command -v java >/dev/null 2>&1 && [ -f $(JDBC_JAR) ]; } || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo "sudo -n" ); \
		$$SUDO apt-get install -y -q default-jdk-headless libpostgresql-jdbc-java >/dev/null 2>&1 || \
		{ $$SUDO apt-get update -q >/dev/null 2>&1 && \
		  $$SUDO apt-get install -y -q default-jdk-headless libpostgresql-jdbc-java >/dev/null 2>&1; } || \
		{ echo "make: the tests need pgjdbc and a JDK and they could not be installed: run apt-get install default-jdk-headless libpostgresql-jdbc-java" >&2; exit 1; }; }

test: setup browser clients
	$(BIN)/ruff check dbrouter python_udfs tests scripts
	$(BIN)/ty check
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

lint: setup
	$(BIN)/ruff check dbrouter python_udfs tests scripts
	$(BIN)/ty check

clean:
	rm -rf .dbrouter target logs
