package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateAcceptsEveryExample(t *testing.T) {
	files, _ := filepath.Glob("../../configs/examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	var out, errb bytes.Buffer
	if code := run(append([]string{"validate"}, files...), &out, &errb); code != 0 {
		t.Fatalf("validate exit %d: %s", code, errb.String())
	}
}

func TestTestPassesTheBookNestTests(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"test", "../../configs/booknest-packing.yaml"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "0 failed") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// writeFiles writes name → content under a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const packing = `name: packing
brokers: [127.0.0.1:1]
source: {topics: [orders]}
output: {topic: jobs}
dead_letter: {topic: jobs.dlq}
transforms:
  - type: set
    field: status
    value: packing
`

func TestTestPrintsADiffForAFailingCaseAndExitsOne(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"packing.yaml": packing,
		"tests/packing.test.yaml": `cases:
  - name: an order becomes a job
    input: {value: {order_id: 1}}
    expect:
      outputs: [{value: {order_id: 1, status: packing}}]
  - name: an order becomes a packed job
    input: {value: {order_id: 2}}
    expect:
      outputs: [{topic: jobs, value: {order_id: 2, status: packed}}]
`,
	})
	var out, errb bytes.Buffer
	code := run([]string{"test", filepath.Join(dir, "packing.yaml")}, &out, &errb)
	file := filepath.Join(dir, "tests", "packing.test.yaml")
	want := "FAIL an order becomes a packed job (" + file + ":6)\n" +
		"     got 1 output\n" +
		"     outputs[0].value.status: want \"packed\", got \"packing\"\n" +
		file + ": 1 passed, 1 failed\n"
	if code != 1 || out.String() != want {
		t.Fatalf("exit %d, output:\n%s\nwant exit 1 and:\n%s\nstderr: %s", code, out.String(), want, errb.String())
	}
}

func TestTestRunsTheTestFilesNamed(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"packing.yaml": packing,
		"a.yaml":       "cases: [{name: passes, input: {value: {}}, expect: {outputs: [{value: {status: packing}}]}}]\n",
		"b.yaml":       "cases: [{name: fails, input: {value: {}}, expect: {release: true}}]\n",
	})
	var out, errb bytes.Buffer
	code := run([]string{"test", filepath.Join(dir, "packing.yaml"), filepath.Join(dir, "a.yaml")}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	code = run([]string{"test", filepath.Join(dir, "packing.yaml"), filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "FAIL fails") {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
}

func TestTestWithoutTestsOrWithABadPipelineIsAUsageError(t *testing.T) {
	dir := writeFiles(t, map[string]string{"packing.yaml": packing, "bad.yaml": "name: x\n"})
	var out, errb bytes.Buffer
	if code := run([]string{"test", filepath.Join(dir, "packing.yaml")}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), filepath.Join(dir, "tests", "packing.test.yaml")) {
		t.Fatalf("no tests: exit %d, stderr %s", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"test", filepath.Join(dir, "bad.yaml")}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "brokers") {
		t.Fatalf("bad pipeline: exit %d, stderr %s", code, errb.String())
	}
	if code := run([]string{"test"}, &out, &errb); code != 2 {
		t.Fatalf("no arguments: exit %d", code)
	}
}
