// The docs paths in this file are fixtures, not pointers to pages:
// linkcheck:ignore-file

package main

import (
	"os"
	"os/exec"
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

// writeTree writes name → content under a new directory, makes it a git
// repository with every file tracked (the code files checked are the
// tracked ones), and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	return dir
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// git runs git with args in dir, away from any repository the test
// itself runs in.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
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

func TestCodeThatNamesADocsPageMustNameOneThatExists(t *testing.T) {
	docs := map[string]string{
		"docs/ops.md":            "# Operations\n\n## Tuning\n\n<a id=\"alert-relay-down\"></a>\n### Alert: RelayDown\n",
		"docs/decisions/lock.md": "# Locks\n",
	}
	code := map[string]string{
		"relay/worker.go": strings.Join([]string{
			"package relay", // 1
			"// The rule, and why (docs/decisions/lock.md).",             // 2
			"// See docs/ops.md#tuning and docs/ops.md, \"Tuning\".",     // 3
			"// Measured in docs/decisions/locks.md.",                    // 4
			"// docs/ops.md#tunning is a typo.",                          // 5
			"// Records live under docs/decisions/*.md and mydocs/x.md.", // 6
			"const page = \"../docs/ops.md\" // docs/ops.mdx is no page", // 7
		}, "\n"),
		"configs/pipeline.schema.json":  `{"description": "see docs/configuration.md#batch"}` + "\n",
		"deploy/prometheus/alerts.yaml": "runbook_url: https://github.com/o/r/blob/main/docs/ops.md#alert-relay-down\nrunbook_url: https://github.com/o/r/blob/main/docs/ops.md#alert-relay-up\n",
		"Makefile":                      "# docs/ops.md says why\nbench:\n",
		"Dockerfile":                    "FROM scratch\n# docs/operations.md#deploying\n",
		"cmd/tool/fixtures_test.go":     "// linkcheck:ignore-file (these docs paths are fixtures)\npackage tool\n// docs/fixture.md\n",
		"assets/logo.bin":               "\x00\x01docs/binary.md\n",
		"docs/notes.md":                 "A page naming docs/plain.md in its text, not as a link.\n",
	}
	files := map[string]string{"README.md": "# Project\n"}
	for name, content := range docs {
		files[name] = content
	}
	for name, content := range code {
		files[name] = content
	}
	root := writeTree(t, files)
	writeFiles(t, root, map[string]string{"scratch.go": "// docs/untracked.md: not tracked, not checked\n"})
	got, err := checkTree(root)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range got {
		lines = append(lines, p.String())
	}
	want := []string{
		`Dockerfile:2: docs path "docs/operations.md#deploying": no file docs/operations.md`,
		`configs/pipeline.schema.json:1: docs path "docs/configuration.md#batch": no file docs/configuration.md`,
		`deploy/prometheus/alerts.yaml:2: docs path "docs/ops.md#alert-relay-up": no anchor #alert-relay-up in docs/ops.md (did you mean #alert-relay-down?)`,
		`relay/worker.go:4: docs path "docs/decisions/locks.md": no file docs/decisions/locks.md`,
		`relay/worker.go:5: docs path "docs/ops.md#tunning": no anchor #tunning in docs/ops.md (did you mean #tuning?)`,
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
