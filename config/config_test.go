package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/configs"
	"github.com/sharerelay/sharerelay/transform"
)

var update = flag.Bool("update", false, "rewrite testdata/*.bad.yml.err from the errors Parse reports")

// testEnv is the fixed environment the testdata files are parsed with, so
// that the machine's environment cannot change the results.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"RELAY_TEST_BROKERS": "kafka-1:9092, kafka-2:9092",
		"RELAY_TEST_WORKERS": "8",
		"RELAY_TEST_EMPTY":   "",
		"RELAY_TEST_USER":    "alice",
		// A secret no error may show, and a broker entry that embeds
		// it.
		"RELAY_TEST_PASSWORD":     testPassword,
		"RELAY_TEST_CREDS_BROKER": "alice:" + testPassword + "@kafka-1:9092",
		"RELAY_TEST_MISSING_FILE": "testdata/security/missing.key",
	}[name]
	return v, ok
}

const testPassword = "hunter2-s3cret"

func ptr[T any](v T) *T { return &v }

// defaultClient is the client section SetDefaults gives a pipeline that
// has none.
var defaultClient = config.Client{
	RequestTimeout: 10 * time.Second,
	Producer:       config.ProducerTuning{Compression: "snappy"},
	Consumer:       config.ConsumerTuning{FetchMaxBytes: 2 << 20, FetchMaxWait: 500 * time.Millisecond},
}

// goodFiles holds what each testdata/*.good.yml decodes to.
var goodFiles = map[string]*config.Pipeline{
	"minimal.good.yml": {
		Name:     "orders-to-jobs",
		Brokers:  []string{"localhost:9092"},
		Delivery: config.ExactlyOnce,
		Workers:  1,
		Source: config.Source{
			Topics:            []string{"orders"},
			Group:             "orders-to-jobs",
			AutoOffsetReset:   "earliest",
			IsolationLevel:    "read_committed",
			ManageGroupConfig: ptr(true),
			ValueFormat:       "json",
			KeyFormat:         "string",
		},
		Output:     config.Output{Topic: "jobs", TransactionTimeout: 10 * time.Second, ValueFormat: "json", KeyFormat: "string", Timestamp: "source"},
		DeadLetter: config.DeadLetter{Topic: "jobs.dlq", Ack: "accept"},
		Batch:      config.Batch{MaxRecords: 2000, AcquireMode: config.AcquireRecordLimit, PollTimeout: time.Second, RenewLocks: ptr(true), Consumers: 4, TransformConcurrency: 1, BackgroundCommit: ptr(true), DrainTimeout: 5 * time.Second},
		Ledger:     config.Ledger{Topic: "orders-to-jobs.ledger"},
		Client:     defaultClient,
	},
	"full.good.yml": {
		Name:     "full_pipeline-1.0",
		Brokers:  []string{"kafka-1:9092", "[::1]:9093"},
		Delivery: config.AtLeastOnce,
		Workers:  256,
		Source: config.Source{
			Topics:            []string{"orders.eu", "orders.us"},
			Group:             "packers",
			AutoOffsetReset:   "latest",
			IsolationLevel:    "read_uncommitted",
			ManageGroupConfig: ptr(false),
			GroupConfigs: map[string]string{
				"share.record.lock.duration.ms": "45000",
				"share.delivery.count.limit":    "6",
			},
			ValueFormat: "json",
			KeyFormat:   "string",
		},
		Output:     config.Output{Topic: "jobs", TransactionTimeout: 90 * time.Second, ValueFormat: "json", KeyFormat: "string", Timestamp: "source"},
		DeadLetter: config.DeadLetter{Topic: "jobs.dlq", MaxAttempts: 10, Ack: "reject"},
		Batch:      config.Batch{MaxRecords: 10000, AcquireMode: config.AcquireBatchOptimized, PollTimeout: 250 * time.Millisecond, RenewLocks: ptr(true), Consumers: 4, TransformConcurrency: 1, DrainTimeout: 0},
		Transforms: []transform.Spec{
			{Type: "set", Name: "mark", Field: "meta.source", Value: map[string]any{
				"system": "booknest", "tags": []any{"a", 1, true}, "none": nil,
			}},
			{Type: "rename", Field: "id", To: "order.id"},
			{Type: "remove", Field: "internal", When: &transform.Condition{Header: "x-debug", Exists: ptr(true)}},
			{Type: "header", Header: "job-type", Value: "packing"},
			{Type: "filter", Action: "keep", When: &transform.Condition{Field: "status", In: []string{"paid", "refunded"}}},
			{Type: "route", Field: "region", Routes: map[string]string{"eu": "jobs.eu", "us": "jobs.us"}, Default: "jobs.other"},
			{Type: "fail", Kind: "retry", Reason: "printer jam", When: &transform.Condition{
				Field: "order.id", Modulo: 7, Remainder: 3, MinDeliveryCount: 2, MaxDeliveryCount: 3,
			}},
			{Type: "delay", Duration: 5 * time.Millisecond, When: &transform.Condition{Field: "size", Equals: ptr("big")}},
		},
		Metrics: config.Metrics{Listen: ":9464"},
		Ledger:  config.Ledger{Topic: "full.claims", Generation: 3},
		Client:  defaultClient,
		Warnings: []config.Warning{{File: "testdata/full.good.yml", Line: 26, Col: 17, Path: "batch.acquire_mode",
			Msg: "batch_optimized can lose records to repeated crashes: " + config.WholeBatchesLost +
				"; write record_limit unless the fetch work of large source batches matters more to you than that risk"}},
	},
	"env.good.yml": {
		Name:     "env-pipeline",
		Brokers:  []string{"kafka-1:9092", "kafka-2:9092"},
		Delivery: config.ExactlyOnce,
		Workers:  8,
		Source: config.Source{
			Topics:            []string{"orders"},
			Group:             "fallback",
			AutoOffsetReset:   "earliest",
			IsolationLevel:    "read_committed",
			ManageGroupConfig: ptr(true),
			ValueFormat:       "json",
			KeyFormat:         "string",
		},
		Output:     config.Output{Topic: "jobs", TransactionTimeout: 20 * time.Second, ValueFormat: "json", KeyFormat: "string", Timestamp: "source"},
		DeadLetter: config.DeadLetter{Topic: "jobs.dlq", Ack: "accept"},
		Batch:      config.Batch{MaxRecords: 2000, AcquireMode: config.AcquireRecordLimit, PollTimeout: time.Second, RenewLocks: ptr(true), Consumers: 4, TransformConcurrency: 1, BackgroundCommit: ptr(true), DrainTimeout: 5 * time.Second},
		Transforms: []transform.Spec{
			{Type: "set", Field: "template", Value: "${NOT_A_VARIABLE} costs $5"},
			{Type: "header", Header: "x-env", Value: 8},
		},
		Ledger: config.Ledger{Topic: "env-pipeline.ledger"},
		Client: defaultClient,
	},
	"expressions.good.yml": {
		Name:     "expressions",
		Brokers:  []string{"localhost:9092"},
		Delivery: config.ExactlyOnce,
		Workers:  1,
		Source: config.Source{
			Topics:            []string{"orders"},
			Group:             "expressions",
			AutoOffsetReset:   "earliest",
			IsolationLevel:    "read_committed",
			ManageGroupConfig: ptr(true),
			ValueFormat:       "json",
			KeyFormat:         "string",
		},
		Output:     config.Output{Topic: "jobs", TransactionTimeout: 10 * time.Second, ValueFormat: "json", KeyFormat: "string", Timestamp: "source"},
		DeadLetter: config.DeadLetter{Topic: "jobs.dlq", Ack: "accept"},
		Batch:      config.Batch{MaxRecords: 2000, AcquireMode: config.AcquireRecordLimit, PollTimeout: time.Second, RenewLocks: ptr(true), Consumers: 4, TransformConcurrency: 1, BackgroundCommit: ptr(true), DrainTimeout: 5 * time.Second},
		Transforms: []transform.Spec{
			{Type: "filter", When: &transform.Condition{Expr: `headers["x-test"] == "true"`}},
			{Type: "set", Field: "total_cents", Expr: "int(value.total * 100.0)",
				When: &transform.Condition{Field: "total", Exists: ptr(true), Expr: `value.currency == "EUR"`}},
			{Type: "map", Expr: "{\"id\": value.id, \"lines\": value.lines}\n"},
			{Type: "split", Field: "lines", To: "line"},
			{Type: "route", Expr: `"jobs." + value.region`, Topics: []string{"jobs.eu", "jobs.us"}, Default: "jobs.other"},
			{Type: "route", Cases: []transform.RouteCase{
				{Expr: "value.line.qty > 10", Topic: "jobs.bulk"},
				{Expr: "has(value.line.gift)", Topics: []string{"jobs.gift", "jobs.audit"}},
			}},
			{Type: "copy", Topics: []string{"jobs.archive"}},
		},
		CEL:    config.CEL{CostLimit: 5000},
		Client: defaultClient,
		Ledger: config.Ledger{Topic: "expressions.ledger"},
	},
	"anchors.good.yml": {
		Name:     "anchors",
		Brokers:  []string{"localhost:9092"},
		Delivery: config.ExactlyOnce,
		Workers:  1,
		Source: config.Source{
			Topics:            []string{"orders"},
			Group:             "anchors",
			AutoOffsetReset:   "earliest",
			IsolationLevel:    "read_committed",
			ManageGroupConfig: ptr(true),
			ValueFormat:       "json",
			KeyFormat:         "string",
		},
		Output:     config.Output{Topic: "jobs", TransactionTimeout: 10 * time.Second, ValueFormat: "json", KeyFormat: "string", Timestamp: "source"},
		DeadLetter: config.DeadLetter{Topic: "jobs.dlq", Ack: "accept"},
		Batch:      config.Batch{MaxRecords: 2000, AcquireMode: config.AcquireRecordLimit, PollTimeout: time.Second, RenewLocks: ptr(true), Consumers: 4, TransformConcurrency: 1, BackgroundCommit: ptr(true), DrainTimeout: 5 * time.Second},
		Transforms: []transform.Spec{
			{Type: "fail", Kind: "retry", Reason: "printer jam", When: &transform.Condition{Field: "order_id", Modulo: 7}},
			{Type: "fail", Kind: "retry", Reason: "paper out", When: &transform.Condition{Field: "order_id", Modulo: 7, Remainder: 1}},
		},
		Ledger: config.Ledger{Topic: "anchors.ledger"},
		Client: defaultClient,
	},
}

// secured returns the pipeline the security testdata files share, with
// the given name and sections.
func secured(name, broker string, tls config.TLS, sasl config.SASL, warnings ...config.Warning) *config.Pipeline {
	return &config.Pipeline{
		Name:     name,
		Brokers:  []string{broker},
		Delivery: config.ExactlyOnce,
		Workers:  1,
		Source: config.Source{
			Topics:            []string{"orders"},
			Group:             name,
			AutoOffsetReset:   "earliest",
			IsolationLevel:    "read_committed",
			ManageGroupConfig: ptr(true),
			ValueFormat:       "json",
			KeyFormat:         "string",
		},
		Output:     config.Output{Topic: "jobs", TransactionTimeout: 10 * time.Second, ValueFormat: "json", KeyFormat: "string", Timestamp: "source"},
		DeadLetter: config.DeadLetter{Topic: "jobs.dlq", Ack: "accept"},
		Batch:      config.Batch{MaxRecords: 2000, AcquireMode: config.AcquireRecordLimit, PollTimeout: time.Second, RenewLocks: ptr(true), Consumers: 4, TransformConcurrency: 1, BackgroundCommit: ptr(true), DrainTimeout: 5 * time.Second},
		Ledger:     config.Ledger{Topic: name + ".ledger"},
		TLS:        tls,
		SASL:       sasl,
		Client:     defaultClient,
		Warnings:   warnings,
	}
}

func init() {
	sec := secured("secured", "kafka-1:9093",
		config.TLS{Enabled: true, CAFile: "testdata/security/ca.pem", CertFile: "testdata/security/client.pem",
			KeyFile: "testdata/security/client.key", ServerName: "kafka.example.com"},
		config.SASL{Mechanism: "SCRAM-SHA-512", Username: "alice", Password: testPassword})
	sec.Client = config.Client{
		ID: "packers", Rack: "eu-west-1a", RequestTimeout: 30 * time.Second,
		Producer: config.ProducerTuning{Compression: "zstd", Linger: 5 * time.Millisecond, MaxBatchBytes: 256 << 10},
		Consumer: config.ConsumerTuning{FetchMaxBytes: 1 << 20, FetchMaxWait: 250 * time.Millisecond},
	}
	goodFiles["security.good.yml"] = sec
	goodFiles["oauth.good.yml"] = secured("oauth", "kafka-1:9093",
		config.TLS{Enabled: true, InsecureSkipVerify: true},
		config.SASL{Mechanism: "OAUTHBEARER", TokenURL: "https://idp.example.com/oauth2/token", ClientID: "relay",
			ClientSecret: testPassword, Scope: "kafka.read kafka.write",
			Extensions: map[string]string{"logicalCluster": "lkc-123", "identityPoolId": "pool-1"}},
		config.Warning{File: "testdata/oauth.good.yml", Line: 10, Col: 25, Path: "tls.insecure_skip_verify",
			Msg: "the brokers' certificates are not verified: anyone between the relay and the brokers can read and change the traffic, credentials included"})
	goodFiles["plain_without_tls.good.yml"] = secured("plain", "kafka-1:9092",
		config.TLS{CAFile: "testdata/security/ca.pem"},
		config.SASL{Mechanism: "PLAIN", Username: "alice", Password: testPassword},
		config.Warning{File: "testdata/plain_without_tls.good.yml", Line: 9, Col: 12, Path: "tls.enabled",
			Msg: "TLS is off, so ca_file is ignored: set enabled: true to use TLS"},
		config.Warning{File: "testdata/plain_without_tls.good.yml", Line: 12, Col: 14, Path: "sasl.mechanism",
			Msg: "PLAIN without TLS sends the password in clear text: enable tls, or use SCRAM-SHA-512"})
	goodFiles["token_file.good.yml"] = secured("token-file", "kafka-1:9093", config.TLS{Enabled: true},
		config.SASL{Mechanism: "OAUTHBEARER", TokenFile: "testdata/security/token"})
	goodFiles["msk_iam.good.yml"] = secured("msk", "b-1.orders.abc123.c2.kafka.eu-west-1.amazonaws.com:9098",
		config.TLS{Enabled: true}, config.SASL{Mechanism: "AWS_MSK_IAM", Region: "eu-west-1"})
}

func TestEveryGoodFileParsesToItsExpectedPipeline(t *testing.T) {
	files, err := filepath.Glob("testdata/*.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if goodFiles[filepath.Base(file)] == nil {
			t.Errorf("%s has no expected pipeline in goodFiles", file)
		}
	}
	for name, want := range goodFiles {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("testdata", name)
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := config.Parse(file, data, testEnv)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			assertPipeline(t, got, want)
		})
	}
}

func TestEveryBadFileReportsExactlyTheErrorsInItsGoldenFile(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.bad.yml files")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := config.Parse(file, data, testEnv)
			if err == nil {
				t.Fatalf("Parse succeeded, want errors; got %+v", p)
			}
			if p != nil {
				t.Errorf("Parse returned a pipeline along with its error")
			}
			var errs config.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T is not a config.Errors: %v", err, err)
			}
			for _, e := range errs {
				if e.File != file {
					t.Errorf("error %q names file %q, want %q", e, e.File, file)
				}
			}
			if !slices.IsSortedFunc(errs, func(a, b config.Error) int {
				if a.Line != b.Line {
					return a.Line - b.Line
				}
				return a.Col - b.Col
			}) {
				t.Errorf("errors are not in file order:\n%v", err)
			}
			got := err.Error() + "\n"
			golden := file + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s (run go test -update after checking them)\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestShippedBookNestPipelineLoadsWithItsDefaults(t *testing.T) {
	// Set but empty, the variables fall back to the file's defaults.
	t.Setenv("KAFKA_BOOTSTRAP_SERVERS", "")
	t.Setenv("RELAY_METRICS_ADDR", "")
	got, err := config.Load("../configs/booknest-packing.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	assertPipeline(t, got, bookNest([]string{"127.0.0.1:9092"}, "127.0.0.1:9464"))
}

func TestEmbeddedBookNestPipelineReadsTheEnvironment(t *testing.T) {
	env := func(name string) (string, bool) {
		v, ok := map[string]string{
			"KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9092,kafka-2:9092",
			"RELAY_METRICS_ADDR":      "0.0.0.0:9100",
		}[name]
		return v, ok
	}
	got, err := config.Parse(configs.BookNestFile, configs.BookNest(), env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	assertPipeline(t, got, bookNest([]string{"kafka-1:9092", "kafka-2:9092"}, "0.0.0.0:9100"))

	onDisk, err := os.ReadFile(filepath.Join("..", "configs", configs.BookNestFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != string(configs.BookNest()) {
		t.Error("configs.BookNest() differs from configs/booknest-packing.yaml")
	}
}

func TestBookNestTransformsBuild(t *testing.T) {
	p, err := config.Parse(configs.BookNestFile, configs.BookNest(), nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	chain, err := transform.Build(p.Transforms)
	if err != nil {
		t.Fatalf("transform.Build: %v", err)
	}
	if chain.Len() != 4 {
		t.Errorf("chain has %d steps, want 4", chain.Len())
	}
}

// bookNest is configs/booknest-packing.yaml with brokers and metrics.listen
// as interpolated.
func bookNest(brokers []string, metrics string) *config.Pipeline {
	return &config.Pipeline{
		Name:     "booknest-packing",
		Brokers:  brokers,
		Delivery: config.ExactlyOnce,
		Workers:  4,
		Source: config.Source{
			Topics:            []string{"booknest.orders"},
			Group:             "booknest-packers",
			AutoOffsetReset:   "earliest",
			IsolationLevel:    "read_committed",
			ManageGroupConfig: ptr(true),
			ValueFormat:       "json",
			KeyFormat:         "string",
		},
		Output:     config.Output{Topic: "booknest.packing-jobs", TransactionTimeout: 10 * time.Second, ValueFormat: "json", KeyFormat: "string", Timestamp: "source"},
		DeadLetter: config.DeadLetter{Topic: "booknest.packing-jobs.dlq", Ack: "accept"},
		Batch:      config.Batch{MaxRecords: 50, AcquireMode: config.AcquireRecordLimit, PollTimeout: time.Second, RenewLocks: ptr(true), Consumers: 4, TransformConcurrency: 1, BackgroundCommit: ptr(true), DrainTimeout: 5 * time.Second},
		Transforms: []transform.Spec{
			{Type: "fail", Name: "bad-address", Kind: "permanent", Reason: "bad address",
				When: &transform.Condition{Field: "order_id", Modulo: 500}},
			{Type: "fail", Name: "printer-jam", Kind: "retry", Reason: "printer jam",
				When: &transform.Condition{Field: "order_id", Modulo: 7, MaxDeliveryCount: 1}},
			{Type: "set", Field: "status", Value: "packing"},
			{Type: "header", Header: "job-type", Value: "packing"},
		},
		Metrics: config.Metrics{Listen: metrics},
		Ledger:  config.Ledger{Topic: "booknest-packing.ledger"},
		Client:  defaultClient,
	}
}

// assertPipeline compares every field a file can set, and the warnings
// (Batch.Explicit has its own test).
func assertPipeline(t *testing.T, got, want *config.Pipeline) {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) != string(w) {
		t.Errorf("pipeline differs\ngot:\n%s\nwant:\n%s", g, w)
	}
	if !reflect.DeepEqual(got.Warnings, want.Warnings) {
		t.Errorf("warnings differ\ngot:  %v\nwant: %v", got.Warnings, want.Warnings)
	}
}

func TestBatchSaysWhichSizesThePipelineSetItself(t *testing.T) {
	const base = "name: p\nbrokers: [b:9092]\nsource: {topics: [in]}\noutput: {topic: out}\ndead_letter: {topic: dlq}\n"
	for _, c := range []struct {
		batch              string
		consumers, maxRecs bool
	}{
		{batch: "", consumers: false, maxRecs: false},
		{batch: "batch: {consumers: 4}\n", consumers: true, maxRecs: false}, // the default's value, written out: kept
		{batch: "batch: {max_records: 500}\n", consumers: false, maxRecs: true},
		{batch: "batch: {consumers: 2, max_records: 4000}\n", consumers: true, maxRecs: true},
	} {
		p, err := config.Parse("p.yml", []byte(base+c.batch), testEnv)
		if err != nil {
			t.Fatalf("%q: %v", c.batch, err)
		}
		if cs, ms := p.Batch.Explicit(); cs != c.consumers || ms != c.maxRecs {
			t.Errorf("%q: Explicit() = %v, %v; want %v, %v", c.batch, cs, ms, c.consumers, c.maxRecs)
		}
		p.SetDefaults() // again: its own defaults are not the file's
		if cs, ms := p.Batch.Explicit(); cs != c.consumers || ms != c.maxRecs {
			t.Errorf("%q after a second SetDefaults: Explicit() = %v, %v; want %v, %v", c.batch, cs, ms, c.consumers, c.maxRecs)
		}
	}
	p := &config.Pipeline{Name: "p", Batch: config.Batch{Consumers: 2}}
	p.SetDefaults()
	if cs, ms := p.Batch.Explicit(); !cs || ms {
		t.Errorf("a pipeline built in code with consumers 2: Explicit() = %v, %v; want true, false", cs, ms)
	}
}

func TestOutputTopicsIncludeEveryTopicATransformMaySendTo(t *testing.T) {
	p := goodFiles["expressions.good.yml"]
	want := []string{"jobs", "jobs.archive", "jobs.audit", "jobs.bulk", "jobs.dlq", "jobs.eu", "jobs.gift", "jobs.other", "jobs.us"}
	if got := p.OutputTopics(); !slices.Equal(got, want) {
		t.Errorf("OutputTopics() = %q, want %q", got, want)
	}
}

func TestChainUsesTheCostLimit(t *testing.T) {
	const expensive = `[1,2,3,4,5,6,7,8,9,10].all(i, [1,2,3,4,5,6,7,8,9,10].all(j, i * j > 0))`
	build := func(limit int) *transform.Chain {
		t.Helper()
		p := &config.Pipeline{CEL: config.CEL{CostLimit: limit},
			Transforms: []transform.Spec{{Type: "filter", When: &transform.Condition{Expr: expensive}}}}
		c, err := p.Chain()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	in := func() *transform.Record { return &transform.Record{Value: []byte(`{}`)} }
	if _, err := build(0).Apply(context.Background(), in()); err != nil {
		t.Errorf("with the default limit: %v", err)
	}
	_, err := build(100).Apply(context.Background(), in())
	if e := transform.Classify(err); e == nil || e.Class != "cel" || e.Kind != transform.KindPermanent {
		t.Errorf("with a limit of 100: %v, want a permanent cel error", err)
	}
}

func TestErrorsListOneProblemPerLine(t *testing.T) {
	_, err := config.Parse("p.yml", []byte("name: p\nworkers: x\n"), nil)
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %T is not a config.Errors", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(errs) {
		t.Fatalf("%d lines for %d errors:\n%v", len(lines), len(errs), err)
	}
	for i, e := range errs {
		if lines[i] != e.Error() {
			t.Errorf("line %d is %q, want %q", i, lines[i], e.Error())
		}
	}
	want := config.Error{File: "p.yml", Line: 2, Col: 10, Path: "workers", Msg: `expected an integer, got "x"`}
	if !slices.Contains(errs, want) {
		t.Errorf("errors lack %+v:\n%v", want, err)
	}
}

func TestErrorFormatLeavesOutUnknownParts(t *testing.T) {
	for _, tc := range []struct {
		e    config.Error
		want string
	}{
		{config.Error{File: "a.yml", Line: 3, Col: 5, Path: "workers", Msg: "bad"}, "a.yml:3:5: workers: bad"},
		{config.Error{File: "a.yml", Line: 3, Msg: "invalid YAML"}, "a.yml:3: invalid YAML"},
		{config.Error{File: "a.yml", Msg: "empty"}, "a.yml: empty"},
		{config.Error{Path: "name", Msg: "required"}, "name: required"},
		{config.Error{File: "a.yml", Line: 3, Col: 5, Msg: "bad", Snippet: "x = 1\n  ^"}, "a.yml:3:5: bad\n    x = 1\n      ^"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v formats as %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestLoadReturnsTheReadErrorOfAMissingFile(t *testing.T) {
	_, err := config.Load("testdata/no-such-file.yml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want an os.ErrNotExist", err)
	}
}

func TestPlainInterpolatedScalarsAreTypedButQuotedOnesStayStrings(t *testing.T) {
	const base = "name: p\nbrokers: [b:1]\nsource: {topics: [a]}\noutput: {topic: b}\ndead_letter: {topic: c}\n"
	p, err := config.Parse("p.yml", []byte(base+"workers: ${RELAY_TEST_WORKERS}\n"), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if p.Workers != 8 {
		t.Errorf("workers = %d, want 8", p.Workers)
	}
	_, err = config.Parse("p.yml", []byte(base+`workers: "${RELAY_TEST_WORKERS}"`+"\n"), testEnv)
	if want := `p.yml:6:10: workers: expected an integer, got the value of ${RELAY_TEST_WORKERS} in quotes (a string)`; err == nil || err.Error() != want {
		t.Errorf("quoted interpolation into an integer: %v, want %s", err, want)
	}
}

func TestSetDefaultsFillsOnlyUnsetFields(t *testing.T) {
	p := &config.Pipeline{Name: "p", Workers: 3, Batch: config.Batch{PollTimeout: time.Minute}}
	p.SetDefaults()
	if p.Workers != 3 || p.Batch.PollTimeout != time.Minute {
		t.Errorf("SetDefaults overwrote set fields: workers %d, poll timeout %s", p.Workers, p.Batch.PollTimeout)
	}
	if p.Delivery != config.ExactlyOnce || p.Source.Group != "p" || p.Ledger.Topic != "p.ledger" ||
		p.Batch.MaxRecords != config.DefaultMaxRecords || p.Output.TransactionTimeout != 10*time.Second ||
		p.Source.ManageGroupConfig == nil || !*p.Source.ManageGroupConfig {
		t.Errorf("SetDefaults left defaults out: %+v", p)
	}
}

// batch.linger defaults to none in both modes (a linger made exactly-once
// slower on the bench); a linger the file asks for is kept.
func TestLingerDefaultsToNoneInBothModes(t *testing.T) {
	for _, c := range []struct {
		delivery  string
		set, want time.Duration
	}{
		{config.ExactlyOnce, 0, 0},
		{config.AtLeastOnce, 0, 0},
		{config.AtLeastOnce, 5 * time.Millisecond, 5 * time.Millisecond},
		{config.ExactlyOnce, 5 * time.Millisecond, 5 * time.Millisecond},
	} {
		p := &config.Pipeline{Name: "p", Delivery: c.delivery, Batch: config.Batch{Linger: c.set}}
		p.SetDefaults()
		if p.Batch.Linger != c.want {
			t.Errorf("%s with batch.linger %s: %s after SetDefaults, want %s", c.delivery, c.set, p.Batch.Linger, c.want)
		}
	}
}

// batch.background_commit defaults to true under exactly-once, stays unset
// under at-least-once, and is refused there when set true (there is no
// commit to overlap).
func TestBackgroundCommitDefaultsOnForExactlyOnceOnly(t *testing.T) {
	const base = "name: p\nbrokers: [b:1]\nsource: {topics: [a]}\noutput: {topic: b}\ndead_letter: {topic: c}\n"
	for _, c := range []struct {
		yaml    string
		want    *bool
		wantErr string
	}{
		{"", ptr(true), ""},
		{"delivery: exactly-once\nbatch: {background_commit: false}\n", ptr(false), ""},
		{"delivery: at-least-once\n", nil, ""},
		{"delivery: at-least-once\nbatch: {background_commit: false}\n", ptr(false), ""},
		{"delivery: at-least-once\nbatch: {background_commit: true}\n", nil,
			"p.yml:7:28: batch.background_commit: needs delivery exactly-once: at-least-once writes without transactions, so there is no commit to overlap"},
	} {
		p, err := config.Parse("p.yml", []byte(base+c.yaml), nil)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: err %v, want %q", c.yaml, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if got := p.Batch.BackgroundCommit; (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%q: batch.background_commit %v, want %v", c.yaml, deref(got), deref(c.want))
		}
	}
}

func deref(b *bool) string {
	if b == nil {
		return "unset"
	}
	return strconv.FormatBool(*b)
}

func TestValidateReportsEveryProblemOfAPipelineBuiltInGo(t *testing.T) {
	p := &config.Pipeline{
		Brokers: []string{"nohost"},
		Source:  config.Source{Topics: []string{"in"}},
		Output:  config.Output{Topic: "in"},
		Transforms: []transform.Spec{
			{Type: "fail"},
		},
	}
	p.SetDefaults()
	err := p.Validate()
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Validate: %v, want config.Errors", err)
	}
	want := strings.Join([]string{
		`brokers[0]: "nohost" is not host:port`,
		"dead_letter.topic: required: the topic failed records are written to",
		"name: required: the pipeline's name, of letters, digits and . _ -",
		`output.topic: "in" is also a source topic: the pipeline would consume its own output`,
		"transforms[0].when: required: a condition selecting the records",
	}, "\n")
	if err.Error() != want {
		t.Errorf("Validate:\n%v\nwant:\n%s", err, want)
	}

	ok := goodFiles["minimal.good.yml"]
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate of a valid pipeline: %v", err)
	}
}

// batch.drain_timeout is 0 (no drain) up to MaxDrainTimeout; outside that
// range the error names the field and the range.
func TestDrainTimeoutIsBounded(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {5 * time.Second, true}, {config.MaxDrainTimeout, true}, {-time.Second, false}, {config.MaxDrainTimeout + time.Second, false}} {
		p := *goodFiles["minimal.good.yml"]
		p.Batch.DrainTimeout = c.d
		err := p.Validate()
		if c.ok && err != nil {
			t.Errorf("drain_timeout %s: %v, want valid", c.d, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "batch.drain_timeout: must be between 0 and 5m0s")) {
			t.Errorf("drain_timeout %s: %v, want an error naming batch.drain_timeout and its range", c.d, err)
		}
	}
}

// history matches a date or a run count ("8 of 35"): lab history, which
// belongs in docs/decisions, not in what a user is told.
var history = regexp.MustCompile(`20[0-9]{2}-[01][0-9]-[0-3][0-9]|[0-9]+ of [0-9]+`)

func TestAcquireModesThatTakeWholeBatchesAreWarnedAbout(t *testing.T) {
	base := "name: p\nbrokers: [localhost:9092]\nsource: {topics: [orders]}\noutput: {topic: jobs}\ndead_letter: {topic: jobs.dlq}\n"
	for _, c := range []struct{ mode, warn string }{
		{"auto", "batch.acquire_mode: auto acquires by record limit"},
		{"batch_optimized", "batch.acquire_mode: batch_optimized can lose records to repeated crashes"},
		{"record_limit", ""},
	} {
		p, err := config.Parse("p.yaml", []byte(base+"batch: {acquire_mode: "+c.mode+"}\n"), testEnv)
		if err != nil {
			t.Fatalf("acquire_mode %s: %v", c.mode, err)
		}
		var got []string
		for _, w := range p.Warnings {
			got = append(got, w.String())
		}
		all := strings.Join(got, "\n")
		if c.warn == "" {
			if strings.Contains(all, "acquire_mode") {
				t.Errorf("acquire_mode %s warned: %s", c.mode, all)
			}
			continue
		}
		if !strings.Contains(all, "p.yaml:6:") || !strings.Contains(all, c.warn) || !strings.Contains(all, "write record_limit") {
			t.Errorf("acquire_mode %s: warnings %q; want one at p.yaml:6 saying %q and what to write instead", c.mode, got, c.warn)
		}
		if history.MatchString(all) {
			t.Errorf("acquire_mode %s: warnings %q carry a date or a run count; a warning says the risk and what to write instead", c.mode, got)
		}
	}
}

func TestAutoAcquiresByRecordLimitAndAModeTheFileNamesIsKept(t *testing.T) {
	for _, c := range []struct{ mode, want, whyHas string }{
		{config.AcquireAuto, config.AcquireRecordLimit, "auto: record_limit; whole record batches can lose records"},
		{config.AcquireRecordLimit, config.AcquireRecordLimit, "set by batch.acquire_mode"},
		{config.AcquireBatchOptimized, config.AcquireBatchOptimized, "set by batch.acquire_mode"},
	} {
		if mode, why := (config.Batch{AcquireMode: c.mode}).Acquire(); mode != c.want || !strings.Contains(why, c.whyHas) {
			t.Errorf("acquire_mode %s: Acquire() = %s (%s); want %s, saying %q", c.mode, mode, why, c.want, c.whyHas)
		}
	}
}
