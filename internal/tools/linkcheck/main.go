// Command linkcheck checks the relative links of the repository's
// Markdown — README.md and every docs/**/*.md — and the docs paths its
// code names, so that moving a section or renaming a heading cannot
// leave a reader at a dead end:
//
//	go run ./internal/tools/linkcheck [root]
//
// A link to a file or directory must name one that exists (relative to
// the page, or to root when it starts with /). A link with a fragment
// into a Markdown page, its own or another, must name an anchor of that
// page: a heading, by GitHub's rule (lower case, punctuation dropped,
// spaces as dashes, -1, -2 … for repeated headings), or an explicit
// <a id="…"> (or name=). Links in fenced code blocks and code spans are
// not links. External links (a scheme such as https:, or //) are not
// fetched. Only ATX headings (# …) make anchors.
//
// Code cannot send a reader to a page that does not exist either: in
// every file git tracks under root that is not Markdown (Go sources, the
// JSON schemas, YAML, the Makefile, the Dockerfile, …), each path into
// docs/ ending in .md, with its #anchor if it has one, must name an
// existing file (from root, whatever precedes it: ../docs/… in a test
// and …/blob/main/docs/… in a URL name the same page) and an anchor of
// it. Binary files are skipped, and so is a file with a line of its own
// reading "// linkcheck:ignore-file" (or "# …"), for fixtures that name
// pages on purpose. This needs git on the PATH and root in a work tree.
//
// Each broken link or path is printed as file:line: message; the exit
// status is 1 if there is any, 2 if a file cannot be read or listed. Its
// test runs it on the repository.
package main

import (
	"fmt"
	"os"
)

func main() {
	root := "."
	switch len(os.Args) {
	case 1:
	case 2:
		root = os.Args[1]
	default:
		fmt.Fprintln(os.Stderr, "usage: linkcheck [root]")
		os.Exit(2)
	}
	problems, err := checkTree(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "linkcheck:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "linkcheck: %d broken %s\n", len(problems), plural(len(problems), "link", "links"))
		os.Exit(1)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
