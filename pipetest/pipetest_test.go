package pipetest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
			s, err := pipetest.Load(pipetest.DefaultFile(path))
			if err != nil {
				t.Fatalf("every shipped pipeline needs tests: %v", err)
			}
			results, err := pipetest.Run(context.Background(), p, s)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if failed := pipetest.Report(&out, s, results, false); failed > 0 {
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
	failed := pipetest.Report(&out, s, pipetest.RunChain(context.Background(), p, chain, s), true)
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

func TestATestFileWithMistakesIsRejectedWithThePositionOfEach(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{
			name: "a misspelt field names the field probably meant, and its absence is not reported too",
			file: "cases:\n  - name: x\n    input: {}\n    expected: {release: true}\n",
			want: `t.test.yaml:4:5: cases[0].expected: unknown field (did you mean "expect"?)`,
		},
		{
			name: "a field close to none lists the known ones",
			file: "cases:\n  - name: x\n    expect: {release: true, outcome: x}\n",
			want: `t.test.yaml:3:29: cases[0].expect.outcome: unknown field (known fields: outputs, dead_letter, release)`,
		},
		{
			name: "a case expecting no outcome is reported at its expect",
			file: "cases:\n  - name: x\n    input: {}\n    expect: {}\n",
			want: `t.test.yaml:4:13: cases[0].expect: required: one of outputs, dead_letter and release`,
		},
		{
			name: "a case without expect is reported at the case",
			file: "cases:\n  - name: x\n    input: {}\n",
			want: `t.test.yaml:2:5: cases[0].expect: required: one of outputs, dead_letter and release`,
		},
		{
			name: "a case expecting two outcomes is reported",
			file: "cases:\n  - name: x\n    expect: {release: true, outputs: []}\n",
			want: `t.test.yaml:3:13: cases[0].expect: set only one of outputs, dead_letter and release`,
		},
		{
			name: "an unknown dead letter kind is reported at the kind",
			file: "cases:\n  - name: x\n    expect: {dead_letter: {kind: fatal}}\n",
			want: `t.test.yaml:3:34: cases[0].expect.dead_letter.kind: must be permanent or attempts-exhausted, got "fatal"`,
		},
		{
			name: "a case without a name is reported at the case",
			file: "cases:\n  - expect: {release: true}\n",
			want: `t.test.yaml:2:5: cases[0].name: required: what the case checks, in a sentence`,
		},
		{
			name: "a value of the wrong type names the type expected, not a Go type",
			file: "cases:\n  - name: x\n    input: {delivery_count: two, timestamp: yesterday}\n    expect: {release: true}\n",
			want: `t.test.yaml:3:29: cases[0].input.delivery_count: expected an integer, got "two"
t.test.yaml:3:45: cases[0].input.timestamp: expected an RFC 3339 timestamp (YYYY-MM-DDThh:mm:ssZ), got "yesterday"`,
		},
		{
			name: "a field set twice is reported at the second",
			file: "cases:\n  - name: x\n    name: y\n    expect: {release: true}\n",
			want: `t.test.yaml:3:5: cases[0].name: duplicate field (first set at line 2)`,
		},
		{
			name: "a negative max_attempts is reported",
			file: "max_attempts: -1\ncases:\n  - {name: x, expect: {release: true}}\n",
			want: `t.test.yaml:1:15: max_attempts: must be 1 or more, got -1`,
		},
		{
			name: "a file without cases is reported",
			file: "max_attempts: 2\n",
			want: `t.test.yaml:1:1: cases: no test cases: list at least one`,
		},
		{
			name: "an empty file is reported",
			file: "",
			want: `t.test.yaml:1:1: cases: no test cases: list at least one`,
		},
		{
			name: "a file that is not a mapping is reported",
			file: "- name: x\n",
			want: `t.test.yaml:1:1: a test file must be a mapping of fields, got a list`,
		},
		{
			name: "a YAML syntax error has its line and column, and nothing else is said",
			file: "cases:\n  - name: x\n    input: {topic: ${T}}\n    expect: {}\n",
			want: `t.test.yaml:3:20: invalid YAML: did not find expected ',' or '}' (inside [ ] or { }, a ${VAR} reference must be quoted: write "${T}")
        input: {topic: ${T}}
                       ^`,
		},
		{
			name: "every problem of the file is reported in one pass, in file order",
			file: "max_attempts: x\ncases:\n  - name: a\n    inputs: {}\n    expect: {release: true}\n  - name: b\n    expect: {}\n  - expect: {dead_letter: {kind: permanant}}\n",
			want: `t.test.yaml:1:15: max_attempts: expected an integer, got "x"
t.test.yaml:4:5: cases[0].inputs: unknown field (did you mean "input"?)
t.test.yaml:7:13: cases[1].expect: required: one of outputs, dead_letter and release
t.test.yaml:8:5: cases[2].name: required: what the case checks, in a sentence
t.test.yaml:8:34: cases[2].expect.dead_letter.kind: must be permanent or attempts-exhausted, got "permanant" (did you mean "permanent"?)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipetest.Parse("t.test.yaml", []byte(tc.file))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tc.want)
			}
			var errs config.Errors
			if !errors.As(err, &errs) {
				t.Errorf("error %T is not a config.Errors", err)
			}
		})
	}
}

func TestATestFileReadsTimestampsAndKeepsTheLineOfEachCase(t *testing.T) {
	s, err := pipetest.Parse("t.test.yaml", []byte(`cases:
  - name: a timestamp may be written plain
    input: {timestamp: 2024-05-01T12:00:00Z}
    expect: {release: true}

  - name: or quoted
    input: {timestamp: "2024-05-01T12:00:01Z"}
    expect: {release: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	if got := s.Cases[0].Input.Timestamp; !got.Equal(want) {
		t.Errorf("timestamp %v, want %v", got, want)
	}
	if got := s.Cases[1].Input.Timestamp; !got.Equal(want.Add(time.Second)) {
		t.Errorf("quoted timestamp %v, want %v", got, want.Add(time.Second))
	}
	if s.Cases[0].Line != 2 || s.Cases[1].Line != 6 {
		t.Errorf("case lines %d and %d, want 2 and 6", s.Cases[0].Line, s.Cases[1].Line)
	}
}

func TestMain(m *testing.M) {
	// The shipped pipelines read the environment; their defaults are what
	// the tests are written for.
	os.Unsetenv("KAFKA_BOOTSTRAP_SERVERS")
	os.Exit(m.Run())
}
