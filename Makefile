# The two quick-start commands are `make run` and `make test`: they build .venv, install, generate,
# then serve / test. `make run` needs Python >= 3.11, make, Node.js 20+ and npm (the web table),
# and installs ICU's headers, pkg-config and g++ with apt-get when they are missing (`make icu`);
# `make test` also installs redis-server and chromium with apt-get when they are missing, and
# `make test-all` (CI) kubectl too.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# Each set-up step prints one line of progress; pip itself prints only errors (-qq), and npm only
# what fails (--loglevel=error), so a first `make run` shows what it is doing, not every package.
PIP := $(BIN)/python -m pip -qq --disable-pip-version-check
comma := ,
say = @echo "==> $(1)"
TOOLS := $(VENV)/.tools
# Serving needs the package and its runtime dependencies only; the tests and linters add [dev].
RUNTIME := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
# The components (docs/design.md): each a project with a src/ layout, installed editable.
COMPONENTS := engine proto/python clients/python service
STUBS := proto/python/src/basra/v1
GEN := $(STUBS)/.generated
ENGINE_PACKAGE := engine/src/basra/engine
ENGINE := $(ENGINE_PACKAGE)/.compiled
ENGINE_SOURCES := $(filter-out $(ENGINE_PACKAGE)/__init__.py,$(wildcard $(ENGINE_PACKAGE)/*.py))
PROTOS := $(shell find proto -name '*.proto') buf.yaml buf.gen.yaml proto/tools/protoc_gen_grpc_python.py
# The last released contract: buf breaking compares proto/ with it (docs/design.md).
RELEASED := proto/released.json
# The TypeScript contract client (tests/contract/node): npm packages from the lock file, stubs by buf.
NODE := tests/contract/node
NODE_MODULES := $(NODE)/node_modules/.package-lock.json
TS_STUBS := $(NODE)/gen/.generated
# The Gateway API schema validator of the deploy tests (tests/deploy/gateway_api).
GATEWAY_API := tests/deploy/gateway_api
GATEWAY_API_MODULES := $(GATEWAY_API)/node_modules/.package-lock.json

.PHONY: help setup run test test-all lint typecheck unit unit-all bench golden redis-server kubectl icu contract-release clean
.PHONY: web chromium screenshot clean-web

# The web table (web/): npm packages from its lock file, stubs by buf, bundled by esbuild into
# web/dist, which `basra-engine serve` serves at / on its HTTP port.
WEB := web
WEB_MODULES := $(WEB)/node_modules/.package-lock.json
WEB_STUBS := $(WEB)/gen/.generated
WEB_DIST := $(WEB)/dist/index.html
WEB_SOURCES := $(shell find $(WEB)/src -name '*.ts') $(addprefix $(WEB)/,index.html style.css build.mjs tsconfig.json)

# Every target with a `## ` comment is listed by `make help`.
help: ## list the targets
	@grep -E '^[a-z][a-z-]*:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /\1\t/' \
	  | awk -F'\t' '{ printf "make %-17s %s\n", $$1, $$2 }'

# Stage 1: the code generators (pinned), before the package can be installed.
$(TOOLS): constraints.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	$(call say,creating $(VENV) and installing the code generators and mypyc (about a minute))
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install -c constraints.txt grpcio-tools buf-bin mypy-protobuf protoc-gen-connectrpc
	$(PIP) install -c constraints.txt mypy 'setuptools>=77'  # mypyc and setup.py build the engine
	@touch $@

# Generated Python stubs: built from proto/ by buf into proto/python/src/basra/v1, never
# committed (ignored), so they cannot go stale: any change to the contract rebuilds them.
$(GEN): $(TOOLS) $(PROTOS)
	$(BIN)/buf lint
	rm -f $(STUBS)/*_pb2*.py $(STUBS)/*_pb2*.pyi $(STUBS)/*_connect.py
	$(BIN)/buf generate
	@touch $@

# Stage 2: the components (editable) with their runtime dependencies, pinned; the suite's tools
# (pytest, mypy, ruff, ...: the dev dependency group) come on top for the test targets only.
# (The engine is compiled by its own step, $(ENGINE), not by these editable installs.)
$(RUNTIME): $(GEN) constraints.txt $(foreach c,$(COMPONENTS),$(c)/pyproject.toml) engine/setup.py | icu
	$(call say,installing the engine$(comma) contract$(comma) client and service (editable) with their dependencies)
	BASRA_ENGINE_COMPILE=no $(PIP) install -c constraints.txt $(foreach c,$(COMPONENTS),-e ./$(c))
	@touch $@

$(STAMP): $(RUNTIME) pyproject.toml
	$(call say,installing the test and lint tools)
	$(PIP) install -c constraints.txt --group dev
	@touch $@

# The compiled engine: mypyc (from mypy, pinned with the generators) builds it in place, beside
# its sources, and again whenever one changes (an editable install would not notice). With no
# working C compiler engine/setup.py builds nothing and the .py sources run: the log line "serving"
# says which engine is in use, and BASRA_ENGINE=pure forces the sources anyway.
$(ENGINE): $(TOOLS) $(ENGINE_SOURCES) engine/setup.py
	$(call say,compiling the engine with mypyc (a minute or two))
	rm -f $(ENGINE_PACKAGE)/*.so
	cd engine && BASRA_ENGINE_COMPILE=auto $(CURDIR)/$(BIN)/python setup.py --quiet build_ext --inplace
	@# An unchanged C file is not recompiled and its copy keeps the old time; the suite refuses
	@# a compiled engine older than its sources (tests/conftest.py), so date it now.
	find $(ENGINE_PACKAGE) -name '*.so' -exec touch {} +
	$(BIN)/python -c 'import basra.engine as e; print("compiled" if e.COMPILED else "pure")' > $@

setup: $(STAMP) $(ENGINE) ## set up .venv (package, stubs, test and lint tools) and stop

# Development only: the embedded store (asked for by name: production refuses to start without
# a Redis URL) and no drain, so Ctrl-C returns at once. RUN_HOST is the address both ports bind:
# `make run RUN_HOST=0.0.0.0` lets other machines of the network in (README, "Friends on the same
# network"); the metrics port stays on localhost. The RUN_*_PORT variables move the three ports
# (`make run RUN_HTTP_PORT=8081`), so that a second server runs beside the first.
RUN_HOST ?= localhost
RUN_GRPC_PORT ?= 50051
RUN_HTTP_PORT ?= 8080
RUN_METRICS_PORT ?= 9090
run: $(RUNTIME) $(ENGINE) ## set up and serve gRPC on localhost:50051, HTTP on localhost:8080 (embedded store; RUN_HOST=0.0.0.0 for the network)
	$(BIN)/basra-engine serve --listen $(RUN_HOST):$(RUN_GRPC_PORT) --http-listen $(RUN_HOST):$(RUN_HTTP_PORT) --metrics-host localhost --metrics-port $(RUN_METRICS_PORT) --store embedded --drain-seconds 0

# import-linter keeps the components' boundaries and vulture finds dead code (both configured
# in pyproject.toml).
lint: $(STAMP) ## buf lint, buf breaking, ruff, import contracts, dead code, declared dependencies
	$(BIN)/buf lint
	$(BIN)/buf breaking --against $(RELEASED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/vulture
	@# Every import of each component is one of its declared dependencies (its pyproject.toml).
	for component in $(COMPONENTS); do (cd $$component && $(CURDIR)/$(BIN)/deptry .) || exit 1; done

typecheck: $(STAMP) $(WEB_STUBS) ## mypy --strict, and tsc over the browser scenarios (web/e2e)
	$(BIN)/mypy
	cd $(WEB) && npx tsc --noEmit -p e2e

# Tests start their own redis-server; install it when the machine lacks one.
redis-server: ## install Debian's redis-server when missing
	@command -v redis-server >/dev/null || { \
	  echo "redis-server not found: installing Debian's redis-server package"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends redis-server \
	  || { $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
	       $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends redis-server; }; }

# PyICU (the display names' confusable check, basra.service.names) compiles against Debian's ICU
# when pip installs it: ICU's headers, pkg-config and a C++ compiler.
icu: ## install Debian's libicu-dev, pkg-config and g++ when missing (PyICU builds against them)
	@{ command -v g++ >/dev/null && pkg-config --exists icu-i18n 2>/dev/null; } || { \
	  echo "ICU headers, pkg-config or g++ not found: installing Debian's libicu-dev pkg-config g++"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends libicu-dev pkg-config g++ \
	  || { $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
	       $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends libicu-dev pkg-config g++; }; }

# Deploy tests render the manifests with kubectl kustomize (Debian's kubernetes-client).
kubectl: ## install Debian's kubectl when missing
	@command -v kubectl >/dev/null || { \
	  echo "kubectl not found: installing Debian's kubernetes-client package"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends kubernetes-client \
	  || { $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
	       $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends kubernetes-client; }; }

# npm ci writes node_modules/.package-lock.json: it stamps the install.
$(NODE_MODULES): $(NODE)/package.json $(NODE)/package-lock.json
	@command -v npm >/dev/null || { echo "Node.js 20+ and npm are needed for the contract tests"; exit 1; }
	cd $(NODE) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(GATEWAY_API_MODULES): $(GATEWAY_API)/package.json $(GATEWAY_API)/package-lock.json
	@command -v npm >/dev/null || { echo "Node.js 20+ and npm are needed for the deploy tests"; exit 1; }
	cd $(GATEWAY_API) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(TS_STUBS): $(NODE_MODULES) $(TOOLS) $(PROTOS) $(NODE)/buf.gen.yaml
	$(BIN)/buf generate --template $(NODE)/buf.gen.yaml
	@touch $@

# The web table's browser tests (tests/web) need the built table and Chromium.
run: $(WEB_DIST)
unit: chromium $(WEB_DIST)
unit-all: chromium $(WEB_DIST)
clean: clean-web

$(WEB_MODULES): $(WEB)/package.json $(WEB)/package-lock.json
	@command -v npm >/dev/null || { echo "Node.js 20+ and npm are needed for the web table"; exit 1; }
	$(call say,installing the web table's npm packages)
	cd $(WEB) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(WEB_STUBS): $(WEB_MODULES) $(TOOLS) $(PROTOS) $(WEB)/buf.gen.yaml
	$(BIN)/buf generate --template $(WEB)/buf.gen.yaml
	@touch $@

# Type-checked (tsc --noEmit), then bundled; dist/index.html is written last.
$(WEB_DIST): $(WEB_STUBS) $(WEB_SOURCES)
	cd $(WEB) && npm run --silent build

web: $(WEB_DIST) ## build the web table into web/dist

# The browser tests drive Debian's Chromium (no browser is downloaded); DejaVu draws Arabic and
# Persian in its screenshots.
chromium: ## install Debian's chromium when missing
	@command -v chromium >/dev/null || { \
	  echo "chromium not found: installing Debian's chromium package"; \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends chromium fonts-dejavu-core \
	  || { $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update && \
	       $$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get install -y --no-install-recommends chromium fonts-dejavu-core; }; }

screenshot: $(STAMP) redis-server chromium $(WEB_DIST) ## rewrite web/screenshot.png (the README's) and web/screenshots/
	README_SCREENSHOT=$(CURDIR)/$(WEB)/screenshot.png WEB_SCREENSHOTS=$(CURDIR)/$(WEB)/screenshots \
	  $(BIN)/pytest -q tests/web -k pictures

clean-web: ## remove the web table's packages, stubs and build
	rm -rf $(WEB)/node_modules $(WEB)/gen $(WEB)/dist

# The test tiers (docs/testing.md; tests/conftest.py marks each directory's tests). pytest-xdist
# runs a worker per core, each a session of its own with its own redis-server on a free port.
# `unit` is the default tier on the engine make built, then the engine's tests on its .py sources
# (the compiled and the interpreted engine must agree; a machine with no C compiler runs the
# sources in the first pass already).
XDIST := -n auto
unit: $(STAMP) $(ENGINE) redis-server $(TS_STUBS) ## pytest only: the default tier
	BASRA_ENGINE=$$(cat $(ENGINE)) $(BIN)/pytest $(XDIST) -m "not full"
	@if [ "$$(cat $(ENGINE))" = compiled ]; then \
	  echo "BASRA_ENGINE=pure $(BIN)/pytest $(XDIST) -m 'not full' tests/engine"; \
	  BASRA_ENGINE=pure $(BIN)/pytest $(XDIST) -m "not full" tests/engine; \
	else echo "no compiled engine: the engine's tests above ran on the .py sources"; fi

# Everything, on both engines. The load and web tests measure a server under load or drive a
# browser, so they run one at a time, after the rest.
SERIAL_TESTS := tests/load tests/web
unit-all: $(STAMP) $(ENGINE) redis-server kubectl $(TS_STUBS) $(GATEWAY_API_MODULES) ## pytest only: every test, on both engines
	@for engine in $$(cat $(ENGINE)) $$([ "$$(cat $(ENGINE))" = compiled ] && echo pure); do \
	  echo "BASRA_ENGINE=$$engine: $(BIN)/pytest $(XDIST) $(addprefix --ignore ,$(SERIAL_TESTS)), then $(SERIAL_TESTS)"; \
	  BASRA_ENGINE=$$engine $(BIN)/pytest $(XDIST) $(addprefix --ignore ,$(SERIAL_TESTS)) || exit 1; \
	  BASRA_ENGINE=$$engine $(BIN)/pytest $(SERIAL_TESTS) || exit 1; \
	done

test: lint typecheck unit ## set up, lint, type-check and run the default test tier
test-all: lint typecheck unit-all ## set up, lint, type-check and run every test on both engines (CI)

bench: $(STAMP) $(ENGINE) redis-server ## engine and service figures, last line JSON
	$(BIN)/python -m tests.bench

# Mutation testing with mutmut (configured in pyproject.toml, [tool.mutmut] and one
# [tool.basra.mutation.<area>] table per area): slow, so not part of `make test`; run it before a
# release. Each area runs in its own copy of the tree, build/mutation/<area> (tests/mutation/area.py;
# its mutants/ keeps the results, so a stopped run resumes): the engine on its .py sources
# (mutants are never compiled), the service's auth, servicer core and stores on the compiled
# engine with the service tests that run in seconds. mutmut runs, niced, only the tests that reach
# each mutated function (Hypothesis's CI profile), then the report prints the score per module
# and every survivor (tests/mutation/report.py).
# AREA picks the areas, MUTANTS narrows a run to mutmut name globs:
#   make mutation AREA=service MUTANTS='basra.service.changes*'
AREA ?= engine service
MUTANTS ?=
.PHONY: mutation
mutation: $(STAMP) $(ENGINE) redis-server ## mutation score of the engine and service core (slow)
	@for area in $(AREA); do \
	  dir=$$($(BIN)/python -m tests.mutation.area $$area) || exit 1; \
	  engine=$$([ $$area = engine ] && echo pure || cat $(ENGINE)); \
	  (cd $$dir && BASRA_ENGINE=$$engine BASRA_HYPOTHESIS_PROFILE=ci nice -n 15 \
	    $(CURDIR)/$(BIN)/mutmut run $(MUTANTS); \
	    $(CURDIR)/$(BIN)/python -m tests.mutation.report) || exit 1; \
	done

golden: $(STAMP) ## rewrite the golden transcripts
	$(BIN)/python -m tests.engine.transcript --update

# Run when releasing the contract: the current proto/ becomes the baseline of buf breaking.
contract-release: $(TOOLS) ## make proto/ the released baseline
	$(BIN)/buf lint
	$(BIN)/buf breaking --against $(RELEASED)
	$(BIN)/buf build --exclude-source-info -o $(RELEASED)
	@echo "$(RELEASED) updated: commit it with the release tag"

clean: ## remove the venv, stubs and caches
	rm -rf $(VENV) mutants $(STUBS)/*_pb2* $(STUBS)/*_connect.py $(GEN) $(ENGINE_PACKAGE)/*.so $(ENGINE) build engine/build .mypy_cache .ruff_cache .pytest_cache .hypothesis $(NODE)/node_modules $(NODE)/gen \
	  $(GATEWAY_API)/node_modules
