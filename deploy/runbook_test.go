package deploy

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// runbookBase is where every alert's runbook lives: one anchor per alert
// in docs/operations.md, on the default branch, so the link works from an
// Alertmanager notification far from a checkout.
const runbookBase = "https://github.com/sharerelay/sharerelay/blob/main/docs/operations.md#"

var camelWord = regexp.MustCompile(`[A-Z][a-z0-9]*`)

// runbookAnchor is the anchor of alert name in docs/operations.md: "alert-"
// and the name's CamelCase words in lower case joined by dashes, e.g.
// SharerelayPipelineDown → alert-sharerelay-pipeline-down.
func runbookAnchor(name string) string {
	words := camelWord.FindAllString(name, -1)
	return "alert-" + strings.ToLower(strings.Join(words, "-"))
}

func TestRunbookAnchor(t *testing.T) {
	for name, want := range map[string]string{
		"SharerelayDown":                        "alert-sharerelay-down",
		"SharerelayShareGroupLagRising":         "alert-sharerelay-share-group-lag-rising",
		"SharerelayRetiredIdHangingTransaction": "alert-sharerelay-retired-id-hanging-transaction",
	} {
		if got := runbookAnchor(name); got != want {
			t.Errorf("runbookAnchor(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestEveryAlertLinksItsRunbook(t *testing.T) {
	anchors := map[string]string{}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			where := fmt.Sprintf("%s: alert %s", alertsFile, r.Alert)
			want := runbookBase + runbookAnchor(r.Alert)
			if got := r.Annotations["runbook_url"]; got != want {
				t.Errorf("%s: annotations.runbook_url = %q, want %q", where, got, want)
			}
			if other, ok := anchors[runbookAnchor(r.Alert)]; ok {
				t.Errorf("%s: its runbook anchor is also %s's", where, other)
			}
			anchors[runbookAnchor(r.Alert)] = r.Alert
		}
	}
	if len(anchors) == 0 {
		t.Fatalf("%s: no alerts read", alertsFile)
	}
}

// operationsDoc is the page the runbook links point into.
const operationsDoc = "../docs/operations.md"

func TestEveryAlertHasItsRunbookEntryInTheOperationsGuide(t *testing.T) {
	doc, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			n++
			anchor := fmt.Sprintf(`<a id="%s"></a>`, runbookAnchor(r.Alert))
			if !strings.Contains(string(doc), anchor+"\n### "+r.Alert+"\n") {
				t.Errorf("%s: no runbook entry for alert %s (want %s followed by the heading ### %s)", operationsDoc, r.Alert, anchor, r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s: no alerts read", alertsFile)
	}
}
