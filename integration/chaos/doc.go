// Package chaos is sharerelay's chaos suite: several `relay run` processes
// (the real binary, real signals) against a real Apache Kafka broker or a
// local three-node cluster, through Toxiproxy, with faults injected while records flow, and the
// exactly-once verdict of the pipeline verifier at the end. All of it is in
// the package's test files; this file only documents it.
//
// # Running it
//
//	CHAOS_LONG=1 go test -count=1 -run '^TestChaos' -v ./integration/chaos/   # the catalogue (make chaos)
//	go test -count=1 -run '^TestChaosRelayHardBounce$' -v ./integration/chaos/
//	CHAOS_SEED=1234 go test -count=1 -run '^TestChaosNemesis$' ./integration/chaos/   # replay a schedule
//	CHAOS_RECORDS=1000000 CHAOS_NEMESIS=20m go test -count=1 -timeout 3h -run '^TestChaosNemesis$' ./integration/chaos/   # make soak
//	CHAOS_NODES=3 CHAOS_RECORDS=1000000 CHAOS_NEMESIS=20m go test -count=1 -timeout 3h -run '^TestChaosNemesis$' ./integration/chaos/   # make soak-cluster
//	CHAOS_LONG=1 CHAOS_RECORDS=1000000 CHAOS_NEMESIS=20m go test -count=1 -timeout 3h -run '^TestChaosCrossClusterNemesis$' ./integration/chaos/   # make soak-cross
//	go test -count=1 -run '^TestChaos(RegistryOutage|NemesisAvro)CI$' -v ./integration/chaos/   # the Avro scenarios' CI twins
//	go test -count=1 -run '^TestChaosFleetCI$' -v ./integration/chaos/   # the elastic fleet's CI twin
//
// Environment:
//
//	CHAOS_SEED         seed of the fault schedule (default: the clock); printed by every scenario
//	CHAOS_RECORDS      records per scenario (default 100,000)
//	CHAOS_NEMESIS      duration of the nemesis scenario (default 3m)
//	CHAOS_NODES        3 runs the nemesis scenario on the local three-node cluster (default 1: the single broker)
//	CHAOS_LONG         1 runs the scenarios too long for every CI run (make chaos sets it; CI runs a short twin of each)
//	CHAOS_REPORT       write the per-scenario report there: JSON if the name ends in .json, else markdown
//	CHAOS_KEEP         keep relay logs and configs even when the scenario passes
//	CHAOS_BATCH_BYTES  batch size of the seeding producer (default 16 KiB, the Java producer's default)
//	CHAOS_MAX_RECORDS, CHAOS_ACQUIRE_MODE, CHAOS_DRAIN_TIMEOUT   batch settings of every relay (see below)
//	KAFKA_BOOTSTRAP_SERVERS, SHARERELAY_REQUIRE_BROKER   as everywhere (see below)
//
// # The set-up
//
// TestMain builds ./cmd/relay with integration/harness, which also holds
// the pipeline file, seeding, the process wrapper and the open-transaction
// check this suite shares with integration/. On first use the suite starts
// its own broker (kafkatest.StartLocal, not the broker other packages
// share), because it must kill and restart it and give it extra listeners
// (kafkatest.WithListeners):
//
//   - PLAINTEXT, advertised as itself: the harness's own clients — seeding,
//     lag, the concurrent reader, the verifier — and the broker's
//     inter-broker traffic (transaction markers). Faults never touch it.
//   - RELAY0..RELAY2, one per relay slot, each advertised as the address of
//     its own in-process Toxiproxy proxy (github.com/Shopify/toxiproxy/v2),
//     which forwards to that listener. Kafka answers a metadata request with
//     the advertised address of the listener the request came in on, so a
//     relay bootstrapped through proxy i keeps every connection on proxy i
//     after the first metadata refresh. A network fault can therefore hit
//     one relay, or all of them, and never the checker.
//
// The cross-cluster scenarios (needCross: 15 to 17) add a second single
// node beside that one, a KRaft cluster of its own with the same
// listeners and its own proxies per relay slot, as the pipeline's source
// cluster: the source topic and the share group live there, the outputs,
// dead letters and claim ledger on the first node, the sink. The pipeline
// file sets source.cluster.brokers: ["${CHAOS_SOURCE_BROKERS}"], which
// each relay process takes from its slot's proxies to the source, so a
// network fault can cut a relay off from one cluster while the other stays
// in reach. The second node is parked while any other scenario runs.
//
// The Avro scenarios (opts.Avro: 18 and 19) also start a schema registry
// of their own (integration/registrytest.Dedicated: Apicurio, a JVM, its
// schemas in a database file that survives a kill -9), stopped when the
// scenario ends, so that it can be killed without touching another test.
// Their orders are Avro values framed in the Confluent wire format
// (harness.AvroOrders), each in one of four writer schema versions
// registered under the source's subject (each adds a field with a
// default: four schema ids); the pipeline decodes them, drops the
// cancelled ones (every 40th order), renames order_id to id, keys the
// output by it, and writes it in Avro with a schema file kept beside the
// pipeline (harness.AvroJobSchema) that the relays register themselves
// (auto_register). The verifier then counts an order without output as
// filtered, and finish requires exactly the cancelled ones to be, and
// reads every output back with the job schema: each order's job once,
// keyed by its id, with the fields its version wrote (checkAvroJobs).
//
// The scenarios that need it (needCluster: scenario 14, and 10 with
// CHAOS_NODES=3) run on a local three-node KRaft cluster instead
// (kafkatest.StartCluster: combined broker-and-controller nodes, topics
// at replication factor 3 and min.insync.replicas 2, the internal topics
// too, unclean leader election off). Every node has the same listeners,
// and relay slot i has one proxy per node: node j's RELAYi listener
// advertises slot i's proxy to node j, so a relay bootstrapped through its
// slot's proxies reaches every leader through them, and a network fault
// can hit a relay's path to every node or to one node only. The harness
// checks this at start-up (each slot is told of every node at its own
// proxy). One environment runs at a time (two cores): a scenario on the
// other one stops the one running, keeping its data, and starts it again
// when a later scenario needs it.
//
// Relays run as processes with `--instance r<i>` (at most three at once on
// two cores, but for the elastic fleet, scenario 20, whose relays use the
// direct listener, have no proxies and no network faults, and are up to
// eight of one worker each under a slow transform). Each incarnation gets its own /metrics port
// (metrics.listen: ${CHAOS_METRICS_ADDR}; brokers: ${CHAOS_BROKERS}); a
// supervisor restarts a relay whenever its process exits, like systemd or
// Kubernetes would: after the delay the fault chose, or after 1 s when it
// exited on its own (counted as "relay exits" with the log tail). The
// harness scrapes every running relay's /metrics every 500 ms and keeps the
// largest value of each counter per incarnation; the report sums those, so
// counts survive kills (they are lower bounds: the last half second of a
// SIGKILLed process is lost).
//
// With KAFKA_BOOTSTRAP_SERVERS set (an external cluster), the relays
// connect to it directly; scenarios that need network faults (6, 10, 14,
// 15, 16, 19) or to kill the broker (4, 10, 11, 14, 15, 16, 19) are skipped with the reason — not failed, even
// with SHARERELAY_REQUIRE_BROKER=1, because the operator chose a cluster the
// harness cannot proxy or restart. Without it, a broker that cannot start
// skips the suite, or fails it with SHARERELAY_REQUIRE_BROKER=1 (as in CI).
// -short skips the suite.
//
// # Every scenario
//
//  1. prints its seed: CHAOS_SEED or the clock. The seed drives the fault
//     schedule — which relay, which fault, when, how long, restart delays.
//     Process and network timing is not reproducible, so a replay runs the
//     same schedule, not the same interleaving;
//  2. creates its own topics (source with 3 partitions, output with 3,
//     dead letters with 1, at the cluster's default replication factor;
//     the relays create the ledger) and a pipeline
//     file (two workers a relay, three relays): 1 ms of simulated work per
//     record (a delay transform, which paces the relays so that the
//     faults land while records flow), batches of 100 records, share lock
//     6 s, transaction timeout 4 s (below the lock),
//     share.delivery.count.limit 10 (the broker's maximum: faults that
//     abort transactions cost a delivery each, and the documented limit
//     of the protocol is a record archived without a dead letter when
//     crashes use up all deliveries — the poison scenario lowers it to 4
//     on purpose);
//  3. seeds unique records {"order_id": i, "run": <pipeline>} keyed by i,
//     all at once or, for the network and nemesis scenarios, as a stream
//     during the faults;
//  4. starts the relays, the metrics scraper, and a read_committed reader
//     of the output and dead-letter topics that runs DURING the faults
//     (Jepsen's "aborted read" check: such a reader must never see a
//     source record twice, and at the end must have seen exactly the final
//     committed set);
//  5. runs its faults;
//  6. heals everything (toxics removed, proxies up, paused relays
//     resumed, broker running; on the cluster every node running and
//     every partition in sync) and waits for quiescence: share-group lag 0
//     and no open transaction (last stable offset = high watermark) on the
//     outputs, the dead letters and the ledger, three checks in a row;
//     then stops the relays with SIGTERM and checks again;
//  7. runs the verifier — audit.Verify, the checker behind `relay verify
//     -c`, over the direct listener; across two clusters `relay verify`
//     itself, the binary, on the pipeline file with each cluster's direct
//     listener — and fails on any lost, duplicated or
//     unexpected record, a record both in the output and the dead letters,
//     a wrong dead-letter count, an invariant violation counted by a relay,
//     or an aborted read. Aborted writes (records in aborted transactions,
//     visible read_uncommitted) are expected under faults and reported.
//     Where the scenario runs the live auditor (every nemesis, 10, 14, 15
//     and 16, and both duplicate-catching scenarios: `relay audit` started
//     with the relays, on the direct listeners, restarted from its
//     checkpoint if it exits), it then waits up to 2 minutes for the
//     auditor to have judged every record (its lag 0), stops it (SIGTERM,
//     exit 0), and fails unless each of its counters — judged, lost,
//     duplicated, incomplete, unexpected, dead-lettered, filtered — equals
//     the verifier's;
//  8. logs one report line (and writes CHAOS_REPORT): records, SIGKILLs,
//     failpoint kills, SIGTERMs, SIGSTOPs, network faults by kind, broker
//     kill -9s and clean restarts (on the cluster: node faults by kind
//     and by the victim's role, and changes of leader of the pipeline's
//     partitions, from a metadata request a second), hanging
//     transactions completed, relay
//     exits, records polled, redeliveries, transactions committed /
//     aborted / unknown, ack errors, claim conflicts, already-committed
//     records, aborted records, what the reader saw, the live auditor's
//     final counters (audit=[judged N lost L dup D lag 0]), time, verdict.
//
// On failure the relay logs and configs are kept (path printed) and the
// tails logged; the broker directory is kept by TestMain.
//
// # The catalogue
//
// Names start with TestChaos so a suite can be picked by prefix. Each
// scenario moves CHAOS_RECORDS (100,000 by default) records unless it
// says otherwise, and asserts what every scenario asserts (above: the
// verifier exact, the concurrent reader clean) plus what it names. "Held
// open" means the failpoint before-commit=sleep(40ms): every transaction
// waits 40 ms before its commit, so that kills and network faults land
// inside an open transaction often rather than rarely.
//
//  1. Control — no faults: the baseline of every count in the report.
//  2. RelayHardBounce — from 3% of the records done until 90% (at most
//     5 minutes), SIGKILL each relay in turn, in a random order per
//     round, 1–3 s apart; each restarts after 0–2 s under the same
//     instance name, which fences the dead process and aborts its open
//     transactions. Transactions held open.
//  3. RelayCleanBounce — the same with SIGTERM; each relay must exit 0
//     within 45 s, writing what it holds within batch.drain_timeout.
//  4. BrokerBounce — kill -9 the broker at 20% of the records, stop it
//     cleanly (SIGTERM) at 50%, kill -9 it again at 75%, each time
//     restarted on the same data directory and ports after 0–3 s, with
//     the janitor (below) completing hanging transactions. Each step
//     must be reached within 4 minutes. Transactions held open.
//  5. Zombie — from 3% until 90%, SIGSTOP each relay in turn for 8–11 s
//     (longer than the 6 s lock and the 4 s transaction timeout), then
//     SIGCONT: its records went to the others and the coordinator
//     aborted its transaction meanwhile, and the resumed process carries
//     on with a stale batch. Transactions held open.
//     ZombieStalledCommit is the same window made deterministic: relay r0
//     stalls 7 s before its 5th commit (failpoint before-commit=sleep(7s)@5),
//     past its transaction timeout and lock; the coordinator aborts the
//     transaction, and the woken zombie gets INVALID_TXN_STATE on commit,
//     which leaves franz-go's producer unusable until it is replaced.
//  6. Network — a quarter of the records seeded, the rest streamed over
//     80 s while connection resets (reset_peer, both directions, 1–4 s),
//     latency 12 s ± 0.5 s on responses (above franz-go's 10 s request
//     timeout overhead) for 13–16 s, a blackhole (timeout toxic: bytes
//     dropped, connections hang) for 3–7 s and the proxy down
//     (connections closed, new ones refused) for 1–4 s hit one relay or,
//     one time in three, all: each kind twice in a random order, 2–5 s
//     apart. Needs the local broker's proxies. Transactions held open.
//  7. AmbiguousCommit — relay r0 loses the answer of every EndTxn after
//     its first (failpoint endtxn-response-lost=error@2+: the commit
//     happened; the worker must learn it from the ledger). With the local
//     broker, relay r1's connection is also cut right after every third
//     EndTxn request by kafka_endtxn_cut, a toxic of this package that
//     parses Kafka request framing (size, api key) on the client→broker
//     stream, forwards the EndTxn request whole and closes the connection:
//     the broker commits, the answer is lost on the wire. Whether that
//     surfaces as an unknown outcome or as a transparent retry of EndTxn
//     is franz-go's real behaviour; the failpoint guarantees unknown
//     outcomes happen, and the scenario fails if none did. (A lost
//     response cannot be injected with Toxiproxy's stock toxics without
//     parsing the protocol; hence the custom toxic.) Relay r2 is healthy.
//  8. SlowTransform — every 2500th record takes 4 s on its first delivery,
//     past a 3 s lock (transaction timeout 2 s), renewal off: its batch's
//     records go to competing workers while the slow worker finishes
//     late and must find them committed by someone else.
//  9. Poison — permanent failures (order_id % 500 == 0), retryable
//     failures that never pass (% 100 == 50, dead-lettered when attempts
//     run out) and transient ones (% 7 == 0, first delivery only), with the
//     group's delivery limit at 4 (two attempts, two spares). Relay r0 starts
//     alone on orders 1..499 (no permanent poison among them) with
//     before-dead-letter-commit=kill@1, so it dies committing an
//     attempts-exhausted dead letter on the record's last attempt; the rest
//     of the orders then arrive, and r0 returns without the failpoint
//     next to r1 and r2. One crash only (see "What a poison record can
//     survive"). The dead letters must be exactly the poison orders (each
//     once, with the right kind, at least one written on a spare
//     delivery), disjoint from the outputs.
//  10. Nemesis — CHAOS_NEMESIS (3 min by default) of random faults from
//     all of the above, three relays × three workers on three partitions
//     (more workers than partitions), a tenth of the records seeded and
//     the rest streamed over 80% of the time. Two nemeses overlap: one on
//     the processes (SIGKILL, SIGTERM, SIGSTOP for 2–11 s; a restarted
//     relay gets, one time in three, a random failpoint: kill after a
//     commit, kill before a commit, lost EndTxn answers, a 7 s stall
//     before a commit; otherwise its transactions are held open), one on
//     the network (resets, latency, blackhole, proxy down, windows of
//     EndTxn cuts) and the broker (kill -9 or clean restart, at most
//     every 45 s and not in the last 30 s). Needs the local broker.
//     With CHAOS_NODES=3 it runs as scenario 14 does, on the cluster.
//  11. BrokerKillDuringCommits — at least 200,000 records in 50-record
//     transactions with no simulated work (hundreds of EndTxn a second),
//     relay r1's EndTxn connection cut after every other request, and the
//     broker killed -9 at 15, 35, 55 and 75% of the records, while
//     markers are in flight: the lost-marker class of issue 11, on every
//     CI run. Outputs whose markers the restarted node drops hang until
//     the janitor completes them; claims whose ledger marker is lost are
//     orphaned, and the relays' resolver must settle them from the
//     outputs. Needs the local broker.
//  12. Oversized — every 40th record carries 30 KB of incompressible
//     padding while the output topic takes batches of at most 20,000
//     bytes; from 10% until 80% a random relay is SIGKILLed every 5–10 s
//     (transactions held open). Exactly the padded records are
//     dead-lettered, once each, of kind write, and no more often after
//     their first delivery than the relays redeliver records at all:
//     a refusal spends no deliveries.
//  13. TopicChurn — the output topic deleted at 30% and at 60% of the
//     records and recreated 3–8 s later, the relays SIGSTOPped while the
//     topic's content is taken (read_uncommitted) just before each
//     deletion (transactions held open). The relays pause and resume by
//     themselves; no record may be committed twice across the topic's
//     incarnations, and every record is in the final topic once or went
//     with a deleted one.
//  14. ClusterNemesis — scenario 10 on the three-node cluster, sized for
//     every CI run (60,000 records, 100 s of faults). The broker bounces
//     give way to a node nemesis of their own, one fault after another,
//     3–10 s apart: kill -9 a node (restarted after 0–5 s), SIGTERM it
//     (restarted after 0–5 s), SIGSTOP it for 2–10 s (past the 4 s broker
//     session, so it is fenced and its leaderships move, and often past
//     the 6 s replica lag, so it leaves the ISRs), or, one time in ten,
//     the min-ISR window: a node killed and, while it is down, a second
//     one frozen for 2–6 s, so that a majority of the quorum is gone and
//     acks=all writes wait below min.insync.replicas. Half the victims are
//     chosen by role: the leader of an output or ledger partition, the
//     transaction coordinator of a worker's transactional id, the share
//     coordinator of a source partition, the share group's coordinator, or
//     the active controller. After each fault the nemesis waits until
//     every partition is back in sync before the next, so no partition
//     loses two replicas outside the min-ISR window. The network nemesis
//     also isolates relays from one node (a blackhole on their proxies to
//     it, often a node with a role) while the cluster keeps it
//     ("isolate-node"). make soak-cluster runs it for 1,000,000 records
//     and 20 minutes.
//  15. CrossClusterCI — scenario 10 across two clusters (the source topic
//     and the share group on one single node, outputs, dead letters and
//     ledger on another), sized for every CI run (24,000 records, 40 s of
//     faults). Network faults go toward one cluster at a time (EndTxn
//     cuts toward the sink, where the transactions are), and instead of
//     broker bounces every relay is now and then cut off from one whole
//     cluster ("isolate-cluster"). The brokers get a nemesis of their
//     own, one broker down at a time: each cluster's broker killed -9
//     once, in a random order, at about 15% and 45% of the faults, then
//     one every 30–60 s while 30 s remain (kill -9 two times in three,
//     else a clean restart). The window a second cluster opens is a
//     transaction committed on the sink whose acknowledgements never
//     reach the source: the records come back and the ledger must show
//     them committed. The verdict is `relay verify` across the clusters
//     and the concurrent reader; the report counts faults per cluster
//     (network=[source: …; sink: …], broker-kill9=[source: …; sink: …])
//     and says clusters=2.
//  16. CrossClusterNemesis — scenario 15 at CHAOS_RECORDS records (at
//     least 100,000) for CHAOS_NEMESIS (3 min by default); only with
//     CHAOS_LONG=1 (make chaos), as CI runs scenario 15. make soak-cross
//     runs it for 1,000,000 records and 20 minutes.
//  17. CrossClusterVerifierCatchesDuplicates — scenario 15's verdict shown
//     to fail on its own window: at-least-once, 6,000 records, relays r0
//     and r1 each killed once by after-commit-before-ack@3 (outputs
//     committed on the sink, acknowledgements never sent to the source).
//     relay verify across the clusters must report the redelivered
//     records duplicated, and the concurrent reader must have seen them
//     twice, and the live auditor beside them must count as many. In
//     every CI run.
//     (ZombieStalledCommit, a zombie frozen just before its commit, runs
//     with scenario 5.)
//  18. RegistryOutage — the Avro pipeline while its schema registry is
//     down. A relay caches a schema id for good once it read it, so an
//     outage only matters for ids it has not seen and for a relay that
//     starts during it: a tenth of the orders is seeded in the first
//     writer schema, a tenth more streams in while the registry is
//     killed -9; while it is down, orders in versions no relay has read
//     yet are seeded, and relays are stopped and restarted with empty
//     caches (SIGKILL and SIGTERM in turn; the SIGTERM once the relay
//     holds records, which it must obey within 45 s, exit 0); the
//     registry stays down until every relay has said on /readyz "schema
//     registry unavailable", and at least a given time; then it starts
//     again on the same database, and the rest streams in, in every
//     version. Nothing is wrong with the records: no dead letter at all,
//     records held (sharerelay_records_held_total), no record released
//     during an outage but by a relay stopped with SIGTERM (a stop
//     releases what it holds; a kill lets the locks expire), none on its
//     last delivery, and the verifier exact. RegistryOutageCI, in every
//     CI run: 20,000 records, one outage of at least 25 s, two relay
//     stops. RegistryOutage, only with CHAOS_LONG=1: CHAOS_RECORDS
//     records (at least 100,000), two outages of at least 90 s with four
//     relay stops each.
//  19. NemesisAvro — scenario 10 on the Avro pipeline: relay SIGKILLs,
//     SIGTERMs, SIGSTOPs and failpoints, network faults and EndTxn cuts,
//     broker bounces, with the outputs read back in Avro at the end.
//     NemesisAvroCI, in every CI run: 24,000 records and 40 s of faults
//     (too short for a broker bounce, which the nemesis spaces 45 s
//     apart). NemesisAvro, only with CHAOS_LONG=1: CHAOS_RECORDS records
//     for CHAOS_NEMESIS.
//  20. Fleet — the elastic fleet: relay instances r0..r7 of one worker,
//     on the direct listener, their share consumers and polls left to
//     the relay's sizing (which shares the group's record locks among
//     the instances it finds), scaled along a schedule under a backlog
//     topped up every half second to stay above what the relays can hold
//     locked. Scale-out starts the lowest missing ordinals; 0.3–2 s later
//     one of the new instances is killed -9 while it joins (restarted by
//     its supervisor, as a pod is). Scale-in sends SIGTERM to the highest
//     ordinals at once, at full load, and kills one of them -9 0.1–0.4 s
//     later, during its drain; every other must exit 0 within 45 s. No
//     dead letter, no record released on its last delivery
//     (sharerelay_released_on_last_delivery_total 0, else the broker
//     archives it), at least one kill landed in a drain, and the verifier
//     exact. FleetCI, in every CI run: 1 → 2 → 4 → 8 → 3 → 1 once, 12 s
//     plateaus, a backlog of 20,000. Fleet, only with CHAOS_LONG=1: 1 →
//     2 → 4 → 8 → 3 → 1 → 8 → 1, 30 s plateaus, a backlog of 40,000, an
//     instance that was already running killed too at each scale-out, and
//     a random instance killed every 5–10 s within the plateaus.
//
// TestChaosVerifierCatchesDuplicates shows the verifier catches what it
// claims: scenario 8's pipeline plus scenario 2's SIGKILLs (from 5% until
// 60%), in at-least-once mode, must produce duplicates, and the verifier
// (and the concurrent reader) must report them; the test fails if they
// report none. The live auditor beside the relays must count as many
// duplicated records as the verifier.
//
// # Broker crashes on a single node: hanging transactions
//
// When the single combined broker/controller is killed -9 with
// transactions in flight, the restarted node sometimes never writes the
// commit or abort markers of a transaction whose EndTxn it had accepted:
// the coordinator completes the transaction (its producer id moves on to
// later epochs) but the markers to some partitions are dropped while the
// restarted node waits for its previous registration to expire
// (kafkatest's Kill documents it). Those partitions' last stable offset
// then stays below the high watermark and read_committed readers stall. A
// replicated cluster does not have this problem (markers go to the new
// leaders): on the cluster no janitor runs, and a transaction quiesce
// still has to complete there is counted ("hanging-txns") as a finding.
// A single node does, so the harness plays the operator instead
// of avoiding broker kills with transactions open: in the broker-crash
// scenarios a janitor looks every 5 s for open transactions the
// coordinator has finished (harness.FindHanging) and completes those seen
// twice with the coordinator's own decision — its current state, or the
// Prepare*/Complete* entry of that epoch in __transaction_state — written
// with WriteTxnMarkers at the records' epoch + 1 (what
// `kafka-transactions.sh abort` does, with the recorded outcome instead of
// always ABORT). quiesce does the same when transactions stay open for the
// transaction timeout + 15 s, lag or not, and after the relays stopped.
// Each one is logged and counted ("hanging-txns"). A transaction it cannot
// judge fails the scenario with the diagnosis.
//
// The relay does not wait for the janitor blindly: before a transaction on
// a producer that may have lost a marker, a worker checks its partitions
// for a transaction of its own producer id still open, and holds its
// records until it is completed ("held" in the report,
// sharerelay_hanging_transactions_total); otherwise its next transaction
// there would end the old records with its own marker (docs/exactly-once.md).
// A worker that learns of the failure only while its next transaction
// writes (through a new connection to the restarted broker) checks again
// before that transaction ends, and ends it as the transaction whose span
// it continued had to end ("continued" in the report,
// sharerelay_lost_markers_total).
//
// # Share partitions that stall
//
// After a broker restart a source partition can stop delivering records
// while the relays are idle and ready, no transaction is open, and
// records wait: its share-partition start offset stays put although
// every record after it was processed, so the in-flight window reaches
// the broker's cap on record locks and nothing more is acquired. A broker
// restart (which reloads the share partition from its persisted state)
// delivers the next record. The relay cannot move a share partition's
// start offset; a replicated cluster reloads it when leadership moves.
// quiesce, and a scenario waiting for progress before its next fault,
// therefore restart the broker (on the cluster, the leader of a source
// partition with lag) cleanly when the lag stays exactly the
// same for 60 s with no transaction open (at most twice per scenario),
// after logging the group's start offsets, and count it
// ("share-stalls"). The verdict is unchanged by it: every record must
// still come out exactly once.
//
// Kafka 4.3.x can also move a share partition's persisted start offset and
// delivered count backwards (its share coordinator takes both from each
// state write as it arrives, so a late write undoes a newer one), which
// leaves a reported lag that no restart clears; 4.4.0 keeps the higher
// values, so the suite needs 4.4.0 or later. The stall above happens on
// 4.4.0 too. A run still stuck after the restarts logs where every
// relay's workers wait (the stall diagnosis: /readyz and the goroutines
// of package relay) before it fails.
//
// # Sizing
//
// Every scenario of the catalogue uses CHAOS_RECORDS records (100,000 by
// default; BrokerKillDuringCommits at least 200,000), three relays of two
// workers (the nemesis three of three) on three source partitions. The
// harness is race-checked; the relay binary is not. `make soak` runs the
// nemesis for 1,000,000 records and 20 minutes, `make soak-cluster` the
// same on the three-node cluster, `make soak-cross` across two clusters.
//
// The seeding producer writes 16 KiB batches (the Java producer's
// default; CHAOS_BATCH_BYTES changes it). A share fetch that acquired
// records beyond what a poll takes would leave them waiting in the
// client's buffer, where nothing renews their locks: the relay fetches
// only inside a poll and takes everything the poll fetched (at most
// max_records with batch.acquire_mode record_limit, the default; whole
// batches with batch_optimized), and CHAOS_BATCH_BYTES=1048576 (source
// batches of thousands of records) checks that this holds
// (docs/decisions/fetch-ahead.md).
//
// CHAOS_MAX_RECORDS sets batch.max_records for every scenario that does
// not choose its own (default 100), CHAOS_ACQUIRE_MODE sets
// batch.acquire_mode and CHAOS_DRAIN_TIMEOUT sets batch.drain_timeout,
// for comparing them under the same faults. Whole batches of small
// records multiply what a relay holds, so every stop of a relay costs a
// delivery to many more records: with CHAOS_ACQUIRE_MODE=batch_optimized
// and polls of 1,000, RelayHardBounce and RelayCleanBounce can lose
// records to the broker's delivery limit, which is why record_limit is
// the default (docs/decisions/acquire-mode.md). A stop that releases
// what the relay holds (CHAOS_DRAIN_TIMEOUT=0s) costs RelayCleanBounce a
// redelivery of every record held; the default drain writes them
// instead (docs/decisions/drain.md). RelayHardBounce is unchanged by the
// drain: a killed relay drains nothing.
//
// # What a poison record can survive
//
// The dead-letter spare deliveries cover one crash during a record's last
// attempt. A crash costs a delivery to every record the process had
// acquired, including those fetched ahead of the batch in flight, and on
// Kafka 4.3 it can cost a second one: when the broker releases the dead
// connection's records it completes the share fetches waiting for that
// partition, and a fetch the dead process left waiting acquires them
// again, for nobody (the broker log shows the record "on last delivery
// attempt … delivered alone" before any live relay had started). Hence
// the default of two spares (config.DefaultMaxAttempts) and the limit of 4
// in the poison scenario. Two crashes of two processes within a record's
// lifetime can still archive a poison record without a dead letter: the
// documented limit (KIP-1191's broker-side dead-letter queue is the
// backstop). The poison scenario therefore crashes once
// (docs/decisions/delivery-limit.md).
package chaos
