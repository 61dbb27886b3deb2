package interoptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// maxDiffs bounds the differences Diff lists.
const maxDiffs = 10

// Diff compares two values in the canonical JSON form and returns "" when
// they are equal, otherwise the paths that differ ("$.lines[1].price:
// want "1.50", got "1.5""), at most ten. Objects compare by key whatever
// the order; numbers by value, exactly (3 and 3.0 are equal, 2^63+1 and
// 2^63 are not), so a float field read back as 3.0 matches a 3 written.
func Diff(want, got json.RawMessage) string {
	w, err := decode(want)
	if err != nil {
		return fmt.Sprintf("want is not JSON: %v", err)
	}
	g, err := decode(got)
	if err != nil {
		return fmt.Sprintf("got is not JSON: %v", err)
	}
	var diffs []string
	diff("$", w, g, &diffs)
	if len(diffs) > maxDiffs {
		diffs = append(diffs[:maxDiffs], "…")
	}
	return strings.Join(diffs, "\n")
}

func decode(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func diff(path string, want, got any, out *[]string) {
	if len(*out) > maxDiffs {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			wv, win := w[k]
			gv, gin := g[k]
			switch {
			case !gin:
				*out = append(*out, fmt.Sprintf("%s.%s: missing, want %s", path, k, show(wv)))
			case !win:
				*out = append(*out, fmt.Sprintf("%s.%s: unexpected %s", path, k, show(gv)))
			default:
				diff(path+"."+k, wv, gv, out)
			}
		}
		return
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		if len(w) != len(g) {
			*out = append(*out, fmt.Sprintf("%s: %d items, want %d: got %s, want %s", path, len(g), len(w), show(g), show(w)))
			return
		}
		for i := range w {
			diff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
		return
	case json.Number:
		if g, ok := got.(json.Number); ok && sameNumber(w, g) {
			return
		}
	default:
		if want == got {
			return
		}
	}
	*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, show(want), show(got)))
}

// sameNumber compares two JSON numbers exactly, as rationals.
func sameNumber(a, b json.Number) bool {
	x, ok1 := new(big.Rat).SetString(a.String())
	y, ok2 := new(big.Rat).SetString(b.String())
	return ok1 && ok2 && x.Cmp(y) == 0
}

// show is v as short JSON.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 120 {
		return string(b[:117]) + "…"
	}
	return string(b)
}
