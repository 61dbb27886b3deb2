package pipetest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/pipetest"
)

// TestEveryShippedPipelinePassesItsTests runs the tests of every pipeline
// in configs/ and configs/examples/, so that `make test` runs them. Every
// shipped pipeline must have tests.
func TestEveryShippedPipelinePassesItsTests(t *testing.T) {
	var pipelines []string
	for _, pattern := range []string{"../configs/*.yaml", "../configs/examples/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		pipelines = append(pipelines, m...)
	}
	if len(pipelines) == 0 {
		t.Fatal("no shipped pipelines found")
	}
	for _, path := range pipelines {
		t.Run(filepath.Base(path), func(t *testing.T) {
			p, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			chain, err := p.Chain()
			if err != nil {
				t.Fatal(err)
			}
			s, err := pipetest.Load(pipetest.DefaultFile(path))
			if err != nil {
				t.Fatalf("every shipped pipeline needs tests: %v", err)
			}
			var out bytes.Buffer
			if failed := pipetest.Report(&out, s, pipetest.Run(context.Background(), p, chain, s), false); failed > 0 {
				t.Errorf("%d failed:\n%s", failed, out.String())
			}
		})
	}
}

func TestDefaultFileIsInTheTestsDirectoryNextToThePipeline(t *testing.T) {
	for in, want := range map[string]string{
		"configs/booknest-packing.yaml": "configs/tests/booknest-packing.test.yaml",
		"p.yml":                         "tests/p.test.yaml",
	} {
		if got := pipetest.DefaultFile(in); got != filepath.FromSlash(want) {
			t.Errorf("DefaultFile(%q) = %q, want %q", in, got, want)
		}
	}
}

const testPipeline = `
name: t
brokers: [localhost:9092]
source: {topics: [in]}
output: {topic: out}
dead_letter: {topic: dlq, max_attempts: 3}
transforms:
  - type: fail
    name: flaky
    when: {expr: 'headers.?flaky.orValue("") == "yes"'}
  - type: split
    field: items
  - type: route
    cases:
      - expr: has(value.gift)
        topics: [gifts, audit]
`

func run(t *testing.T, tests string) (string, int) {
	t.Helper()
	p, err := config.Parse("t.yaml", []byte(testPipeline), nil)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := p.Chain()
	if err != nil {
		t.Fatal(err)
	}
	s, err := pipetest.Parse("t.test.yaml", []byte(tests))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failed := pipetest.Report(&out, s, pipetest.Run(context.Background(), p, chain, s), true)
	return out.String(), failed
}

func TestCasesThatHoldPass(t *testing.T) {
	out, failed := run(t, `
cases:
  - name: a split makes one output per element, numbered
    input: {value: {items: [{n: 1}, {n: 2.0, gift: true}]}}
    expect:
      outputs:
        - {value: '{"n": 1.0}', headers: {sharerelay.source.index: "0", sharerelay.source.count: "3"}}
        - {topic: gifts, value: {gift: true, n: 2}, headers: {sharerelay.source.index: "1"}}
        - {topic: audit, value: {n: 2, gift: true}, headers: {sharerelay.source.count: "3", absent: null}}
  - name: an empty array is filtered out
    input: {value: {items: []}}
    expect: {outputs: []}
  - name: a retryable failure is released before the last attempt
    input: {value: {}, headers: {flaky: "yes"}, delivery_count: 2}
    expect: {release: true}
  - name: a retryable failure is dead-lettered on the last attempt
    input: {value: {}, headers: {flaky: "yes"}, delivery_count: 3}
    expect: {dead_letter: {kind: attempts-exhausted, class: fail, step: flaky}}
  - name: a value that is not JSON passes a condition on headers, then fails the split
    input: {value: "not json"}
    expect: {dead_letter: {kind: permanent, class: json, step: 1:split, reason: not JSON}}
`)
	if failed != 0 || !strings.Contains(out, "t.test.yaml: 5 passed, 0 failed") {
		t.Fatalf("failed %d:\n%s", failed, out)
	}
}

func TestAFailingCasePrintsEveryDifference(t *testing.T) {
	out, failed := run(t, `
cases:
  - name: wrong values
    input: {key: k, value: {items: [{n: 1, s: "a"}]}}
    expect:
      outputs:
        - topic: elsewhere
          key: other
          value: {n: 2, t: "b"}
          headers: {sharerelay.source.count: "2", missing: "x"}
  - name: wrong outcome
    input: {value: {items: [1, 2]}}
    expect: {release: true}
  - name: wrong count
    input: {value: {items: [1, 2]}}
    expect: {outputs: [{value: 1}]}
  - name: wrong dead letter
    input: {value: "x", headers: {flaky: "yes"}}
    expect: {dead_letter: {kind: permanent, class: json}}
`)
	want := `FAIL wrong values (t.test.yaml:3)
     got 1 output
     outputs[0].topic: want elsewhere, got out
     outputs[0].key: want "other", got "k"
     outputs[0].value.n: want 2, got 1
     outputs[0].value.s: want nothing, got "a"
     outputs[0].value.t: want "b", got nothing
     outputs[0].headers["missing"]: want "x", got none
     outputs[0].headers["sharerelay.source.count"]: want "2", got none
FAIL wrong outcome (t.test.yaml:11)
     want the record released for another delivery, got 2 outputs
FAIL wrong count (t.test.yaml:14)
     want 1 output, got 2:
       got outputs[0]: topic out, key null, value "1"
       got outputs[1]: topic out, key null, value "2"
FAIL wrong dead letter (t.test.yaml:17)
     want a dead letter, got released for another delivery
t.test.yaml: 0 passed, 4 failed
`
	if failed != 4 || out != want {
		t.Fatalf("failed %d, output:\n%s\nwant:\n%s", failed, out, want)
	}
}

func TestATestFileWithMistakesIsRejected(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"unknown field": {"cases:\n  - name: x\n    inptu: {}\n    expect: {release: true}\n", "field inptu not found"},
		"no outcome":    {"cases:\n  - name: x\n    input: {}\n    expect: {}\n", "t.test.yaml:2: cases[0]: expect: set exactly one of outputs, dead_letter and release"},
		"two outcomes":  {"cases:\n  - name: x\n    expect: {release: true, outputs: []}\n", "set exactly one"},
		"bad kind":      {"cases:\n  - name: x\n    expect: {dead_letter: {kind: fatal}}\n", "must be permanent or attempts-exhausted"},
		"no name":       {"cases:\n  - expect: {release: true}\n", "name: required"},
		"no cases":      {"max_attempts: 2\n", "no test cases"},
		"empty":         {"", "no test cases"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := pipetest.Parse("t.test.yaml", []byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestMain(m *testing.M) {
	// The shipped pipelines read the environment; their defaults are what
	// the tests are written for.
	os.Unsetenv("KAFKA_BOOTSTRAP_SERVERS")
	os.Exit(m.Run())
}
