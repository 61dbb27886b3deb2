package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSlugFollowsGitHubsRule(t *testing.T) {
	for heading, want := range map[string]string{
		"What the relay guarantees":                  "what-the-relay-guarantees",
		"Preflight: `relay check`":                   "preflight-relay-check",
		"Dead letters: acknowledge, inspect, replay": "dead-letters-acknowledge-inspect-replay",
		"Alert: SharerelayDown":                      "alert-sharerelaydown",
		"`client.producer`":                          "clientproducer",
		"`transforms[].when`":                        "transformswhen",
		"Failures & outages":                         "failures--outages",
		"snake_case and kebab-case":                  "snake_case-and-kebab-case",
		"A [linked](other.md#x) word":                "a-linked-word",
		"Straße über alles":                          "straße-über-alles",
		"  trailing spaces  ":                        "trailing-spaces",
		"Permissions (ACLs)":                         "permissions-acls",
		"`type: set`":                                "type-set",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// writeTree writes name → content under a new directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckTreeReportsEachBrokenLinkAndNothingElse(t *testing.T) {
	root := writeTree(t, map[string]string{
		"README.md": strings.Join([]string{
			"# Project", // 1
			"See [ops](docs/ops.md) and [gone](docs/no.md).",       // 2
			"[install](#install) [nope](#instal)",                  // 3
			"[alert](docs/ops.md#alert-relay-down)",                // 4
			"[missing alert](docs/ops.md#alert-relay-up)",          // 5
			"[web](https://example.com/x.md#y) [mail](mailto:a@b)", // 6
			"```sh",                                // 7
			"[not a link](nowhere.md)",             // 8
			"```",                                  // 9
			"`[code](nowhere.md)` [dir](configs/)", // 10
			"## Install",                           // 11
			"## Install",                           // 12
			"[second](#install-1) [third](#install-2)",            // 13
			"[ref]: docs/missing.md",                              // 14
			"[up](../outside.md)",                                 // 15
			"[src](configs/a.yaml#L3) [abs](/docs/ops.md#tuning)", // 16
			"![img](docs/pic.png)",                                // 17
		}, "\n"),
		"docs/ops.md":    "# Operations\n\n## Tuning\n\n<a id=\"alert-relay-down\"></a>\n### Alert: RelayDown\n\nBack to the [README](../README.md#project).\n",
		"configs/a.yaml": "x: 1\n",
	})
	got, err := checkTree(root)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range got {
		lines = append(lines, p.String())
	}
	want := []string{
		`README.md:2: link "docs/no.md": no file docs/no.md`,
		`README.md:3: link "#instal": no anchor #instal in README.md (did you mean #install?)`,
		`README.md:5: link "docs/ops.md#alert-relay-up": no anchor #alert-relay-up in docs/ops.md (did you mean #alert-relay-down?)`,
		`README.md:13: link "#install-2": no anchor #install-2 in README.md (did you mean #install-1?)`,
		`README.md:14: link "docs/missing.md": no file docs/missing.md`,
		`README.md:15: link "../outside.md" points outside the repository`,
		`README.md:17: link "docs/pic.png": no file docs/pic.png`,
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../../.."

func TestTheRepositorysReadmeAndDocsHaveNoBrokenLinks(t *testing.T) {
	files, err := pages(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "README.md") || len(files) < 2 {
		t.Fatalf("found only %v: is %s the repository's root?", files, repoRoot)
	}
	problems, err := checkTree(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// date matches a calendar date or a year and month (2026-12-06, 2026-12).
var date = regexp.MustCompile(`\b(19|20)\d\d-(0[1-9]|1[0-2])\b`)

// TestTheREADMECarriesNoDates keeps measurement history out of the
// user's guide: dates belong to docs/benchmarks.md and docs/decisions/.
// It lives here because this is the package that reads the docs.
func TestTheREADMECarriesNoDates(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if m := date.FindString(line); m != "" {
			t.Errorf("README.md:%d: a date (%s): move the history it belongs to into docs/benchmarks.md or docs/decisions/", i+1, m)
		}
	}
}
