# corectl: make (install + build), make test, make bench, make up, make down
SHELL := /bin/bash
NODE_MODULES_STAMP := node_modules/.package-lock.json

.PHONY: all install build test bench up down clean docs fuzz fault up-ha down-ha

all: build

$(NODE_MODULES_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: $(NODE_MODULES_STAMP)

build: install
	npx tsc -p tsconfig.json

# TESTS may name compiled test files or folders, e.g. make test TESTS=dist/test/flags
test: build
	node scripts/run-tests.mjs $(TESTS)

# The HA fault suite at full size (make test runs it with 400 creates instead of 2000).
fault: build
	FAULT_CREATES=2000 node scripts/run-tests.mjs dist/test/fault

bench: build
	node scripts/run-bench.mjs $(BENCH)

fuzz: build
	node scripts/run-fuzz.mjs

docs: build
	node scripts/gen-docs.mjs

up: build
	bash scripts/up.sh

down:
	bash scripts/down.sh

# HA control plane (network namespaces as root, else loopback ports): etcd x3, API servers x3, haproxy, 2+2 leaders, a node.
up-ha: build
	node scripts/up-ha.mjs

down-ha:
	bash scripts/down-ha.sh

clean:
	rm -rf dist
