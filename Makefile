# The two quick-start commands are `make run` and `make test`; both work on a fresh clone with
# nothing but Python >= 3.11 and make: they build .venv, install, generate, then serve / test.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check --quiet
TOOLS := $(VENV)/.tools
STAMP := $(VENV)/.installed
GEN := gen/python/.generated
PROTOS := $(shell find proto -name '*.proto') buf.yaml buf.gen.yaml proto/tools/protoc_gen_grpc_python.py
# The last released contract: buf breaking compares proto/ with it (README, "Contract releases").
RELEASED := proto/released.json
# The TypeScript contract client (tests/contract/node): npm packages from the lock file, stubs by buf.
NODE := tests/contract/node
NODE_MODULES := $(NODE)/node_modules/.package-lock.json
TS_STUBS := $(NODE)/gen/.generated

.PHONY: help run test lint typecheck unit bench golden redis-server kubectl contract-release clean

help:
	@echo "make run    set up and start the service on localhost:50051 (embedded store)"
	@echo "make test   set up and run the whole suite (contract, lint, types, tests)"
	@echo "make bench  print engine and service performance figures"

# Stage 1: the code generators (pinned), before the package can be installed.
$(TOOLS): constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -c constraints.txt grpcio-tools buf-bin mypy-protobuf
	@touch $@

# Generated Python stubs: built from proto/ by buf, never committed (gen/ is ignored), so they
# cannot go stale: any change to the contract rebuilds them.
$(GEN): $(TOOLS) $(PROTOS)
	$(BIN)/buf lint
	$(BIN)/buf generate
	touch gen/python/basra/__init__.py gen/python/basra/v1/__init__.py
	@touch $@

# Stage 2: the package itself (editable) with every runtime and dev dependency, pinned.
$(STAMP): $(GEN) pyproject.toml constraints.txt
	$(PIP) install -c constraints.txt -e '.[dev]'
	@touch $@

run: $(STAMP)
	$(BIN)/basra-engine serve --listen localhost:50051

lint: $(STAMP)
	$(BIN)/buf lint
	$(BIN)/buf breaking --against $(RELEASED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# Tests start their own redis-server; install it when the machine lacks one.
redis-server:
	@command -v redis-server >/dev/null || { \
	  echo "redis-server not found: installing Debian's redis-server package"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends redis-server \
	  || { $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
	       $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends redis-server; }; }

# Deploy tests render the manifests with kubectl kustomize (Debian's kubernetes-client).
kubectl:
	@command -v kubectl >/dev/null || { \
	  echo "kubectl not found: installing Debian's kubernetes-client package"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends kubernetes-client \
	  || { $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
	       $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends kubernetes-client; }; }

# npm ci writes node_modules/.package-lock.json: it stamps the install.
$(NODE_MODULES): $(NODE)/package.json $(NODE)/package-lock.json
	@command -v npm >/dev/null || { echo "Node.js 20+ and npm are needed for the contract tests"; exit 1; }
	cd $(NODE) && npm ci --no-audit --no-fund
	@touch $@

$(TS_STUBS): $(NODE_MODULES) $(TOOLS) $(PROTOS) $(NODE)/buf.gen.yaml
	$(BIN)/buf generate --template $(NODE)/buf.gen.yaml
	@touch $@

unit: $(STAMP) redis-server kubectl $(TS_STUBS)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP) redis-server
	$(BIN)/python -m tests.bench

golden: $(STAMP)
	$(BIN)/python -m tests.engine.transcript --update

# Run when releasing the contract: the current proto/ becomes the baseline of buf breaking.
contract-release: $(TOOLS)
	$(BIN)/buf lint
	$(BIN)/buf breaking --against $(RELEASED)
	$(BIN)/buf build --exclude-source-info -o $(RELEASED)
	@echo "$(RELEASED) updated: commit it with the release tag"

clean:
	rm -rf $(VENV) gen .mypy_cache .ruff_cache .pytest_cache .hypothesis $(NODE)/node_modules $(NODE)/gen
