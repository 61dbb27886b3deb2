# sharerelay — see README.md. Two commands matter on a fresh machine:
#   make demo   the BookNest pipeline on an embedded kfake cluster (Go only)
#   make test   every test, the real-broker ones on a local Apache Kafka
#               broker fetched from Maven Central and started by the tests
# and for CI and deploying: make lint, make build (a static bin/relay),
# make image (needs Docker); make compat runs a broker-kill scenario on
# each supported Kafka release line.

SHELL    := /bin/bash
GO       ?= go
BIN      ?= bin
PKGS     := ./...
# Generous: the real-broker suite starts a JVM broker and runs fault tests.
TEST_TIMEOUT ?= 45m

.PHONY: all build image demo test test-unit test-pipelines lint bench bench-formats bench-cluster bench-fleet bench-cross chaos cluster-tests soak soak-cluster soak-cross compat kafka-up kafka-down clean

all: build

# A static binary: CGO_ENABLED=0 (Go's own DNS resolver, no libc), so it
# runs on any Linux and in distroless/static; -trimpath keeps the build
# machine's paths out of it. The check reads the flags back from the
# binary's build info.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/relay ./cmd/relay
	@$(GO) version -m $(BIN)/relay | grep -qE '^\s+build\s+CGO_ENABLED=0$$' || { echo "$(BIN)/relay is not built with CGO_ENABLED=0"; exit 1; }
	@$(GO) version -m $(BIN)/relay | grep -qE '^\s+build\s+-trimpath=true$$' || { echo "$(BIN)/relay is not built with -trimpath"; exit 1; }

# The container image (Dockerfile; needs Docker with BuildKit, which CI
# does not have: deploy/deploy_test.go checks the Dockerfile instead).
IMAGE ?= sharerelay:dev
image:
	docker build --build-arg REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) -t $(IMAGE) .

demo:
	$(GO) run ./cmd/relay demo

# The alerting rules' evaluation tests are a module of their own
# (Prometheus's engine stays out of the relay's module graph): ./... does
# not reach them, so each target below runs them too.
RULETEST := deploy/prometheus/ruletest
HELMTEST := deploy/helm

# -race everywhere; -p 1 so the real-broker packages do not each start a
# JVM broker at the same time on a 2-core machine. Then, whatever those
# gave, the alert rules' and the Helm chart's tests (modules of their own,
# so that Prometheus, Helm and the Kubernetes API stay out of the relay's
# module graph), into the same test.out; without -race, as they evaluate
# rules and render templates in one goroutine. The status is the first
# failure's.
test:
	$(GO) vet $(PKGS)
	$(GO) vet -tags testcontainers ./integration/kafkatest/
	{ $(GO) test -race -count=1 -p 1 -timeout $(TEST_TIMEOUT) -v $(PKGS); s=$$?; \
	  (cd $(RULETEST) && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m -v ./...); r=$$?; \
	  (cd $(HELMTEST) && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m -v ./...); h=$$?; \
	  exit $$(( s != 0 ? s : r != 0 ? r : h )); } 2>&1 | tee test.out | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic|\s+\S+_test\.go)' ; exit $${PIPESTATUS[0]}

# Fast tests only (kfake and pure Go), no broker.
test-unit:
	$(GO) test -race -count=1 -short $(PKGS)
	cd $(RULETEST) && $(GO) test -count=1 -short ./...
	cd $(HELMTEST) && $(GO) test -count=1 -short ./...

# The shipped pipelines' own tests (configs/tests/, configs/examples/tests/),
# run offline by relay test. make test and make test-unit run them too, as
# pipetest's TestEveryShippedPipelinePassesItsTests.
test-pipelines: build
	@status=0; for p in configs/*.yaml configs/examples/*.yaml; do \
		[ -e "$$p" ] || continue; $(BIN)/relay test $$p || status=1; \
	done; exit $$status

# gofmt, go vet, staticcheck with every check (staticcheck.conf), and a doc
# comment on every exported name (internal/tools/doccheck). staticcheck is
# pinned here and run with go run rather than as a tool dependency: its own
# dependencies (x/tools, x/mod, toml) stay out of go.mod and so out of the
# relay's module graph; go caches the built binary. The first run fetches
# it from the module proxy.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run ./internal/tools/doccheck .
	$(GO) vet -tags testcontainers ./integration/kafkatest/
	cd $(RULETEST) && $(GO) vet ./...
	cd $(HELMTEST) && $(GO) vet ./...

# Throughput, client CPU a record and latency side by side (raw share
# consume, hand-written copier, relay at-least-once, relay exactly-once, a
# classic consumer-group exactly-once copier and its loop without the
# transaction; the hand-written ones poll as many records as the relay),
# on a broker with Kafka's default share-group limits
# (BENCH_ARGS='-broker-record-locks 0,10000' adds a broker raised to
# 10,000 record locks a partition, after it), then the restart
# time of a claim ledger with a million claims behind its snapshot. About
# 30 minutes on a 2-core machine (1,000,000 records a size, 5 interleaved
# runs); BENCH_ARGS='-records 200000 -runs 3' for a quick look.
# The relay also runs as its own process (bin/relay), 3 runs of each mode,
# for its peak RSS, its CPU a record and exactly-once over at-least-once
# as an operator runs it, then once more in exactly-once with the live
# auditor (relay audit) beside it, for the auditor's CPU-seconds per
# million records and peak RSS beside the relay's; and the latency runs
# alternate with those of the bench of
# BENCH_BASELINE (the relay of the day the throughput issue was filed),
# built from git; BENCH_BASELINE= leaves the baseline out. The elastic
# fleet has a target of its own, make bench-fleet (below): its own broker
# and about 9 minutes.
BENCH_BASELINE ?= 080df91
bench: build
	@rm -f $(BIN)/bench-baseline
	@if [ -n "$(BENCH_BASELINE)" ]; then integration/build-baseline.sh $(BENCH_BASELINE) $(BIN)/bench-baseline; fi
	$(GO) run ./integration/cmd/bench -relay-bin $(BIN)/relay -process-runs 3 $(if $(BENCH_BASELINE),-latency-baseline $(BIN)/bench-baseline) $(BENCH_ARGS)
	$(GO) test -run '^$$' -bench BenchmarkLedgerRestart -benchtime 3x -timeout 30m ./integration/
	@mkdir -p $(BIN)
	$(GO) test -run '^$$' -bench BenchmarkFormats -benchmem -count 6 -timeout 30m ./format/ | tee $(BIN)/bench-formats.out | $(GO) run ./internal/tools/benchratio -base json

# The cost of each format a record (decode, steps, encode) beside JSON's,
# medians of 6 runs: Avro and Protobuf with a rename and a filter, and
# with a step that reads nothing (pass-through), at 200 B and 1 KiB. Part
# of make bench; a minute on its own.
bench-formats:
	@mkdir -p $(BIN)
	$(GO) test -run '^$$' -bench BenchmarkFormats -benchmem -count 6 -timeout 30m ./format/ | tee $(BIN)/bench-formats.out | $(GO) run ./internal/tools/benchratio -base json

# The throughput tables on a local three-node KRaft cluster (-nodes 3):
# every topic at replication factor 3 and min.insync.replicas 2, every
# producer acks=all, each node with the single bench broker's settings and
# a 1 GiB heap. The contenders of the exactly-once comparison only
# (relay-eos, relay-alo, copier, copier-strict, classic-eos), ratios paired
# per run, and beside each contender's CPU a record the brokers' (all three
# nodes): on one machine they share the cores. No latency, scaling or
# relay-process runs. BENCH_ARGS='-records 200000 -runs 3' for a quick look.
bench-cluster:
	$(GO) run ./integration/cmd/bench -nodes 3 -contenders relay-eos,relay-alo,copier,copier-strict,classic-eos -classic-workers= -scaling=false -latency=false $(BENCH_ARGS)

# The elastic fleet (-fleet): relay processes of bin/relay, each its own
# instance (relay-0, relay-1, ...), scaled 1 → 2 → 4 → 8 → 3 → 1 under a
# backlog that never runs dry, a minute a size, scale-in by SIGTERM to the
# highest ordinals as a StatefulSet does; a 5 ms transform a record, one
# worker an instance, 4 records transformed at once, so one instance is
# bound by its transform and the fleet could scale. Prints each plateau's
# committed output rate (read_committed) against N × one instance's, the
# time to reach it, the relays' and the broker's CPU, and the verdict of
# the verifier (exact, nothing dead-lettered or archived). About 9
# minutes on 2 cores; BENCH_ARGS='-fleet-plateau 30s' for a quick look.
# The samples go to FLEET_CSV and the chart of them to FLEET_SVG
# (integration/cmd/fleetchart); docs/benchmarks.md says how the chart in
# docs/images was drawn.
FLEET_CSV ?= $(BIN)/fleet.csv
FLEET_SVG ?= $(BIN)/fleet.svg
bench-fleet: build
	$(GO) run ./integration/cmd/bench -fleet -relay-bin $(BIN)/relay -fleet-csv $(FLEET_CSV) $(BENCH_ARGS)
	$(GO) run ./integration/cmd/fleetchart -o $(FLEET_SVG) fleet=$(FLEET_CSV)

# Exactly-once across two clusters against one (-cross): a second local
# broker, its own KRaft cluster with the first one's settings, holds the
# source topic and share group of relay-eos-cross, whose outputs, dead
# letters and claim ledger are on the first; relay-eos runs the same
# pipeline on the first alone, the same records, runs interleaved. One
# warm-up round, 1 KiB values, 5 runs of 100,000 records: a few minutes
# on 2 cores. The table gives cross over same, paired per run, and both
# rows' CPU a record (the brokers': both JVMs in both rows).
bench-cross:
	$(GO) run ./integration/cmd/bench -cross -contenders relay-eos -sizes 1024 -records 100000 -runs 5 -warmup-records 50000 -warmup-rounds 1 -classic-workers= -scaling=false -latency=false $(BENCH_ARGS)

# The chaos catalogue (integration/chaos): relays as processes, faults by
# signals, Toxiproxy, failpoints and broker kills; every scenario ends with
# the verifier. CHAOS_SEED replays a run. CHAOS_LONG=1 adds the scenarios
# too long for every CI run, whose short twins CI runs.
chaos:
	CHAOS_LONG=1 $(GO) test -count=1 -timeout 60m -run '^TestChaos' -v ./integration/chaos/

# Every real-broker test on the local three-node cluster
# (integration/replicated_test.go) and across two clusters
# (integration/crosscluster_test.go): CI runs the TestRealClusterCI and
# TestRealCrossClusterCI ones, this runs them all (the three-node ones
# about 8 minutes on a 2-core machine), and the rows of the lost-marker
# test that show it broken without its checks (about 4 minutes more).
cluster-tests:
	SHARERELAY_CLUSTER_TESTS=all $(GO) test -count=1 -timeout 50m -run '^(TestRealCluster|TestRealCrossCluster|TestRealBrokerATransactionThatContinuesALostMarkersSpan)' -v ./integration/

# Scenario 10 (nemesis) for a million records; not in CI.
soak:
	CHAOS_RECORDS=1000000 CHAOS_NEMESIS=20m $(GO) test -count=1 -timeout 3h -run '^TestChaosNemesis$$' -v ./integration/chaos/

# The same on a local three-node cluster (replication factor 3, min ISR 2),
# its nodes killed, stopped and paused one at a time besides the relay and
# network faults; not in CI, which runs a small one (TestChaosClusterNemesis).
soak-cluster:
	CHAOS_NODES=3 CHAOS_RECORDS=1000000 CHAOS_NEMESIS=20m $(GO) test -count=1 -timeout 3h -run '^TestChaosNemesis$$' -v ./integration/chaos/

# The nemesis across two clusters: the source topic and the share group on
# one local single-node cluster, outputs, dead letters and ledger on
# another, each cluster's broker killed in turn besides the relay faults
# and network faults toward each; not in CI, which runs a small one
# (TestChaosCrossClusterCI).
soak-cross:
	CHAOS_LONG=1 CHAOS_RECORDS=1000000 CHAOS_NEMESIS=20m $(GO) test -count=1 -timeout 3h -run '^TestChaosCrossClusterNemesis$$' -v ./integration/chaos/

# The Kafka releases make compat runs on: the newest patch of each
# supported release line, as Maven Central serves them. The relay refuses
# anything before 4.2 (internal/brokerfloor); docs/compat.md has the table.
COMPAT_VERSIONS ?= 4.2.2 4.3.2 4.4.0

# The compatibility matrix: on each of COMPAT_VERSIONS, one broker at a
# time, relay check, then an exactly-once stream of 4,000 records with the
# broker killed -9 a quarter of the way through and restarted, judged by
# relay verify (TestCompatExactlyOnceAcrossABrokerKill, which runs only
# here). Prints a table (version, records, lost,
# duplicated, broker kills, redeliveries, verdict, seconds) and fails if
# any release is not exact. A few minutes; a release's jars are fetched
# with mvn the first time. Logs in bin/compat/.
compat:
	$(GO) run ./integration/cmd/compat -versions '$(COMPAT_VERSIONS)' -logs $(BIN)/compat

kafka-up:
	@$(GO) run ./integration/cmd/kafkabroker up

kafka-down:
	@$(GO) run ./integration/cmd/kafkabroker down

clean:
	rm -rf $(BIN) test.out
