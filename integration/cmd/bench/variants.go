package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// aloVariantPrefix starts a -relay-variants entry that is at-least-once:
// a variant of relay-alo rather than of relay-eos.
const aloVariantPrefix = "alo:"

// parseVariants parses -relay-variants: batch settings separated by
// semicolons, each key=value,... as -relay-batch takes them, each an extra
// relay contender of the throughput table. A variant is relay-eos's, or
// relay-alo's after the prefix alo:; only, the -contenders list, must not
// leave out the contender a variant is compared with.
func parseVariants(s string, only []string) ([]contender, error) {
	var out []contender
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		base := relayEOS
		if rest, ok := strings.CutPrefix(part, aloVariantPrefix); ok {
			base, part = relayALO, rest
		}
		batch, err := keyValues("-relay-variants", part)
		if err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			return nil, fmt.Errorf("-relay-variants: %q sets no batch setting", part)
		}
		v := base.variant(batch, len(out)+1)
		if slices.ContainsFunc(out, func(c contender) bool { return c.name == v.name }) {
			return nil, fmt.Errorf("-relay-variants: %s is listed twice", v.name)
		}
		if len(only) > 0 && !slices.Contains(only, base.name) {
			return nil, fmt.Errorf("-relay-variants: %s is compared with %s, which -contenders leaves out", v.name, base.name)
		}
		out = append(out, v)
	}
	return out, nil
}

// variant is relay contender c with batch settings of its own, the n-th
// variant: named after them (relay-eos{consumers=1,max_records=4000}),
// with a slug for its groups and topics, whose names allow no braces.
func (c contender) variant(batch map[string]string, n int) contender {
	kv := make([]string, 0, len(batch))
	for _, k := range slices.Sorted(maps.Keys(batch)) {
		kv = append(kv, k+"="+batch[k])
	}
	v := c
	v.base = c.name
	v.name = c.name + "{" + strings.Join(kv, ",") + "}"
	v.slug = c.name + "-v" + strconv.Itoa(n)
	v.batch = batch
	return v
}

// variantRatio is a variant's throughput over that of the contender it
// varies, paired run by run (pairedRatio) and as the ratio of the two
// medians.
type variantRatio struct {
	Variant   string  `json:"variant"`
	Base      string  `json:"base"`
	Paired    float64 `json:"paired_ratio"`
	OfMedians float64 `json:"ratio_of_medians"`
}

// variantRatios returns, for every variant among cs, its ratio to the
// contender it varies (absent from cs: no ratio).
func variantRatios(cs []contenderResult) []variantRatio {
	var out []variantRatio
	for _, v := range cs {
		if v.Base == "" {
			continue
		}
		base := findContender(cs, v.Base)
		if base == nil {
			continue
		}
		p, m := pairedAndOfMedians(v.Runs, base.Runs)
		out = append(out, variantRatio{Variant: v.Name, Base: v.Base, Paired: p, OfMedians: m})
	}
	return out
}

// bestVariantGoal is the goal that base (relay-eos) land within 5% of the
// best of its variants among cs: base over the variant it compares worst
// with, paired run by run. ok is false without such variants.
func bestVariantGoal(cs []contenderResult, base string) (g goal, ok bool) {
	b := findContender(cs, base)
	if b == nil {
		return goal{}, false
	}
	for _, v := range cs {
		if v.Base != base {
			continue
		}
		p, m := pairedAndOfMedians(b.Runs, v.Runs)
		if !ok || p < g.Value {
			g, ok = goal{What: fmt.Sprintf("%s/best variant (%s)", base, v.Name), Value: p, OfMedians: m}, true
		}
	}
	g.Target = minOverBestVariant
	g.Met = g.Value >= g.Target
	return g, ok
}

// minOverBestVariant: the relay's defaults land within 5% of the best
// hand-tuned batch setting tried (-relay-variants).
const minOverBestVariant = 0.95

// findContender returns the result of contender name among cs, or nil.
func findContender(cs []contenderResult, name string) *contenderResult {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
