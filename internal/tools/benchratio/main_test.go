package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTheMedianAndTheRatioToTheBaselineAreShown(t *testing.T) {
	in := `goos: linux
BenchmarkFormats/json/200B/x-2   	 100	 1000 ns/op	 50 B/op	 5 allocs/op
BenchmarkFormats/avro/200B/x-2   	 100	 500 ns/op	 20 B/op	 2 allocs/op
BenchmarkFormats/json/200B/x-2   	 100	 3000 ns/op	 50 B/op	 5 allocs/op
BenchmarkFormats/avro/200B/x-2   	 100	 700 ns/op	 20 B/op	 2 allocs/op
BenchmarkFormats/json/200B/x-2   	 100	 2000 ns/op	 50 B/op	 5 allocs/op
BenchmarkFormats/avro/200B/x-2   	 100	 9000 ns/op	 20 B/op	 2 allocs/op
PASS
`
	rs, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	report(&out, rs, "json")
	got := out.String()
	// json: median 2000; avro: median 700, 0.35× of json.
	for _, want := range []string{"Formats/json/200B/x     3  2000", "Formats/avro/200B/x     3   700", "0.35×"} {
		if !strings.Contains(strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
