# dbrouter: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
WAREHOUSE ?= .dbrouter/demo.duckdb
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: setup demo test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first: the CPU wheel 2.13.0 is on the machine; installing it before
# sentence-transformers keeps pip from resolving the CUDA build.
$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

# Main job: build the knowledge base over the shipped demo databases, then route questions.
demo: setup
	$(BIN)/dbrouter build --sources demo/sources.yml --warehouse $(WAREHOUSE)
	$(BIN)/dbrouter route --warehouse $(WAREHOUSE) --k 3 \
		"How many singers do we have?" \
		"Which courses does the history department offer?" \
		"List the products that cost more than 100 dollars" \
		"Which orchestra has the most performances?"

test: setup
	$(BIN)/ruff check dbrouter python_udfs tests scripts
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check dbrouter python_udfs tests scripts

clean:
	rm -rf .dbrouter target logs
