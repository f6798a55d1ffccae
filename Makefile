# Two commands for a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# llama-cpp-python compiles llama.cpp from source on first install (≈9 min on 2 cores); pip caches the wheel.
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: run test install install-dev lint clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-dev: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[dev]"

run: install
	$(BIN)/botpsy demo

lint: install-dev
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

test: install-dev lint
	$(BIN)/pytest -q -m "not slow"
	$(BIN)/pytest -q -m slow

clean:
	rm -rf $(VENV) build dist *.egg-info
