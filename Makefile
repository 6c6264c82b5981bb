# The two quick-start commands are `make run` and `make test`; both work on a fresh clone with
# nothing but Python >= 3.11 and make: they build .venv, install, generate, then serve / test.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help run test lint typecheck unit bench clean

help:
	@echo "make run    set up and start the service on localhost:50051 (embedded store)"
	@echo "make test   set up and run the whole suite (lint, types, tests)"
	@echo "make bench  print engine and service performance figures"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

run: $(STAMP)
	$(BIN)/basra-engine serve --listen localhost:50051

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m tests.bench.engine_bench

clean:
	rm -rf $(VENV) gen .mypy_cache .ruff_cache .pytest_cache .hypothesis
