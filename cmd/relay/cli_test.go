package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// allCommands returns every command and subcommand, as typed.
func allCommands() []*command {
	return append(append([]*command{}, commands...), dlqCommands...)
}

func TestEveryCommandsHelpSaysWhatItDoesWithAnExampleAndExitsZero(t *testing.T) {
	for _, c := range allCommands() {
		name := strings.Fields(c.name)
		var first string
		for _, args := range [][]string{
			append(name[:len(name):len(name)], "--help"),
			append(name[:len(name):len(name)], "-h"),
			append([]string{"help"}, name...),
		} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out, errb bytes.Buffer
				if code := run(args, &out, &errb); code != 0 || errb.Len() > 0 {
					t.Fatalf("exit %d, stderr %q; want exit 0 and nothing on stderr", code, errb.String())
				}
				help := out.String()
				for _, want := range []string{
					"relay " + c.name + ": " + c.summary,
					"usage: relay " + c.synopsis,
					"exit status:\n  0  ",
					"\n  2  ",
					"examples:\n  relay ",
				} {
					if !strings.Contains(help, want) {
						t.Errorf("the help lacks %q:\n%s", want, help)
					}
				}
				if c.exit1 != "" && !strings.Contains(help, "\n  1  ") {
					t.Errorf("the help does not say what exit 1 means:\n%s", help)
				}
				if first == "" {
					first = help
				} else if help != first {
					t.Errorf("relay %s prints another help than relay %s --help:\n%s", strings.Join(args, " "), c.name, help)
				}
			})
		}
	}
}

func TestRelayHelpListsEveryCommandWithWhatItDoesAndTheExitCodes(t *testing.T) {
	var first string
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("relay %s: exit %d", args[0], code)
		}
		if first == "" {
			first = out.String()
		} else if out.String() != first {
			t.Errorf("relay %s prints another text than relay help", args[0])
		}
	}
	for _, c := range commands {
		if !strings.Contains(first, "  "+c.name) || !strings.Contains(first, c.summary) {
			t.Errorf("relay help does not list %s with what it does (%q):\n%s", c.name, c.summary, first)
		}
	}
	for _, want := range []string{"usage: relay <command> [flags] <pipeline.yaml>", "  0  success", "  1  the check failed", "  2  usage or configuration error"} {
		if !strings.Contains(first, want) {
			t.Errorf("relay help lacks %q:\n%s", want, first)
		}
	}
}

func TestTheCommandLineTakesThePipelineFileEitherWayWithFlagsBeforeOrAfterIt(t *testing.T) {
	dir := exitFiles(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string // stdout is all of it; stderr must hold its text
	}{
		{"the file as the argument", []string{"validate", f("packing.yaml")}, 0, f("packing.yaml") + ": ok\n", ""},
		{"the file as -c, as before", []string{"validate", "-c", f("packing.yaml")}, 0, f("packing.yaml") + ": ok\n", ""},
		{"the same file given both ways is read once", []string{"validate", "-c", f("packing.yaml"), f("packing.yaml")}, 0, f("packing.yaml") + ": ok\n", ""},
		{"the same file both ways by two paths is read once", []string{"validate", "-c", f("packing.yaml"), dir + "/./packing.yaml"}, 0, f("packing.yaml") + ": ok\n", ""},
		{"validate takes -c and further files as a list", []string{"validate", "-c", f("packing.yaml"), f("other.yaml")}, 0,
			f("packing.yaml") + ": ok\n" + f("other.yaml") + ": ok\n", ""},
		{"run given two different files, as -c and as the argument, is a usage error", []string{"run", "-c", f("packing.yaml"), f("other.yaml")}, 2,
			"", "give the pipeline file once"},
		{"check given two different files, as -c and as the argument, is a usage error", []string{"check", f("other.yaml"), "-c", f("packing.yaml")}, 2,
			"", "give the pipeline file once"},
		{"a flag after the file is a flag", []string{"run", f("packing.yaml"), "--log-format", "xml"}, 2, "", `--log-format: "xml" is not text or json`},
		{"-c after the file is -c", []string{"run", f("packing.yaml"), "-c", f("other.yaml")}, 2, "", "give the pipeline file once"},
		{"test takes -v after the files", []string{"test", f("packing.yaml"), "-v"}, 0,
			"ok   passes (" + f("tests/packing.test.yaml") + ":1)\n" + f("tests/packing.test.yaml") + ": 1 passed, 0 failed\n", ""},
		{"after --, an argument that starts with a dash is a file", []string{"validate", "--", "-packing.yaml"}, 2, "", "open -packing.yaml"},
		{"a flag relay does not know is named", []string{"check", "--timeot", "1s", f("packing.yaml")}, 2, "", "-timeot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code || out.String() != tc.stdout || !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("relay %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout %q, %q in stderr",
					strings.Join(tc.args, " "), code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
