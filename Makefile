# Entry points. Each installs what a fresh Debian machine lacks before it builds.
SWIFT ?= swift
.PHONY: deps build release run sandbox console demo test test-containers check-generated fuzz bench-rpc bench-ledger bench-apple bench-entitlement bench-webhooks bench-ingest bench-import format clean

deps:
	@scripts/install-deps build

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# The whole system on loopback with its embedded defaults (Ctrl-C stops it).
run: build
	scripts/run-local

# The services and the store simulator wired together on loopback, on the simulator's clock,
# with the event log delivering to a local webhook receiver: the quickstart's playground
# (docs/quickstart.md; a new sandbox at each start; Ctrl-C stops it).
sandbox: build
	scripts/run-local --sandbox

# The support console against the services of `make run` or `make sandbox` on this machine
# (docs/console.md): it prints the address to open; Ctrl-C stops it.
console: build
	.build/debug/subctl console --listen 127.0.0.1:$(or $(CONSOLE_PORT),8090) \
		$(if $(wildcard .run/sandbox/storesim/apple-root.pem),--apple-root .run/sandbox/storesim/apple-root.pem)

check-generated: deps
	scripts/check-generated

# Every test: the generated-code check, the Swift test suites, a short pass of every fuzz target
# (scripts/fuzz --ci, under a minute once built), then the container test; each part runs and
# reports even when an earlier one failed (scripts/test-all).
test: deps
	SWIFT=$(SWIFT) scripts/test-all

# The images built with no registry, the compose stack up on loopback with the store
# simulator, one purchase per store, the verifier scaled to 2, and down (podman).
test-containers: build
	scripts/test-containers

# Every libFuzzer target for FUZZ_SECONDS seconds each (default 60; `make fuzz FUZZ_SECONDS=600`).
fuzz: deps
	FUZZ_SECONDS=$(or $(FUZZ_SECONDS),60) scripts/fuzz

# RPC round trips through the real runtime beside redis-benchmark (not a test).
bench-rpc: deps
	@scripts/install-deps bench
	$(SWIFT) build -c release --product rpcbench
	$(SWIFT) build -c release --product ledger
	.build/release/rpcbench --server .build/release/ledger

# Durable appends through the ledger on SQLite and PostgreSQL beside the raw engines (not a test).
bench-ledger: deps
	@scripts/install-deps bench
	$(SWIFT) build -c release --product ledgerbench
	$(SWIFT) build -c release --product ledger
	.build/release/ledgerbench --server .build/release/ledger

# App Store JWS verifications per second beside openssl speed's ECDSA verifies (not a test;
# openssl is in the base package set).
bench-apple: deps
	$(SWIFT) build -c release --product applebench
	.build/release/applebench

# CheckAccess beside redis-benchmark, the view's memory per account and time to ready (from a
# snapshot and from a checkpoint) with 1,000,000 accounts (`make bench-entitlement
# ACCOUNTS=10000000`; any other flag in BENCH_ARGS), and how fast a purchase reaches CheckAccess
# (not a test).
bench-entitlement: deps
	@scripts/install-deps bench
	$(SWIFT) build -c release --product entitlementbench
	$(SWIFT) build -c release --product ledger
	$(SWIFT) build -c release --product entitlement
	.build/release/entitlementbench --ledger .build/release/ledger --entitlement .build/release/entitlement \
		$(if $(ACCOUNTS),--accounts $(ACCOUNTS)) $(BENCH_ARGS)

# Webhook delivery from the event log to a local receiver beside wrk posting the same body, and
# the lag at half that rate (not a test).
bench-webhooks: deps
	@scripts/install-deps bench
	$(SWIFT) build -c release --product webhookbench
	$(SWIFT) build -c release --product ledger
	.build/release/webhookbench --ledger .build/release/ledger

# A renewal wave through the whole system: N subscriptions per store (default 10,000, a few
# minutes; `make bench-ingest SUBSCRIPTIONS=2000` for a quicker run; any other flag in
# BENCH_ARGS, `BENCH_ARGS=--postgres` for the ledger on a throwaway PostgreSQL server) renewed,
# their notifications posted to the verifier 16 at a time until the webhook has each; the rate,
# CPU per notification of each service, store API calls, latency at half the rate, beside
# openssl's verifies and a durable append of the ledger's engine (sqlite3, or pgbench) (not a test).
bench-ingest: deps
	@scripts/install-deps bench
	$(SWIFT) build -c release --product ingestbench
	$(SWIFT) build -c release --product storesim
	$(SWIFT) build -c release --product ledger
	$(SWIFT) build -c release --product verifier
	$(SWIFT) build -c release --product entitlement
	.build/release/ingestbench --bin .build/release $(if $(SUBSCRIPTIONS),--subscriptions $(SUBSCRIPTIONS)) $(BENCH_ARGS)

# subctl import of 10,000 subscriptions (5,000 App Store in a RevenueCat export, 5,000 Play in
# the own CSV) against storesim, killed with SIGKILL a third of the way and run again; prints
# the time both runs of both files took and the rate, one call at a time and then with the
# default 8 in flight (`make bench-import ROWS=2000` for another size).
bench-import: deps
	$(SWIFT) build --build-tests
	IMPORT_ROWS=$(or $(ROWS),10000) IMPORT_CONCURRENCY=1 \
		$(SWIFT) test --skip-build --filter ImportScenarioTests/killedAndResumed
	IMPORT_ROWS=$(or $(ROWS),10000) IMPORT_CONCURRENCY=8 \
		$(SWIFT) test --skip-build --filter ImportScenarioTests/killedAndResumed

format:
	$(SWIFT) format --in-place --recursive Package.swift Shared Services Tests

clean:
	rm -rf .build

# A narrated year of two customers (one per store) through the three services and the store
# simulator; prints each step and exits 0 (logs and the SQLite file stay in .run/demo).
demo: build
	.build/debug/demo
