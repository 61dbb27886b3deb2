package kgolog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func newTestLogger(window time.Duration) (*Logger, *bytes.Buffer, *time.Time) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	l := New(slog.New(h), window)
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	return l, &buf, &now
}

func lines(buf *bytes.Buffer) []string {
	s := strings.TrimSpace(buf.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestARepeatedWarningIsWrittenOnceAWindowWithTheCountHeldBack(t *testing.T) {
	l, buf, now := newTestLogger(time.Minute)
	for range 50 {
		l.Log(kgo.LogLevelWarn, "unable to open connection to broker", "addr", "b1:9092", "err", "connection refused")
	}
	if got := lines(buf); len(got) != 1 || !strings.Contains(got[0], `level=WARN msg="franz-go: unable to open connection to broker" addr=b1:9092`) || strings.Contains(got[0], "repeated") {
		t.Fatalf("after 50 repeats within a window: %q; want the first line alone", got)
	}
	*now = now.Add(59 * time.Second)
	l.Log(kgo.LogLevelWarn, "unable to open connection to broker", "addr", "b2:9092")
	if got := lines(buf); len(got) != 1 {
		t.Fatalf("a repeat 59 s later was written: %q", got)
	}
	*now = now.Add(time.Second)
	l.Log(kgo.LogLevelWarn, "unable to open connection to broker", "addr", "b3:9092")
	got := lines(buf)
	if len(got) != 2 || !strings.Contains(got[1], "addr=b3:9092 repeated=50") {
		t.Fatalf("a window after the first line: %q; want a second line with repeated=50", got)
	}
	*now = now.Add(2 * time.Minute)
	l.Log(kgo.LogLevelWarn, "unable to open connection to broker")
	if got := lines(buf); len(got) != 3 || strings.Contains(got[2], "repeated") {
		t.Fatalf("nothing held back since the last line: %q; want no repeated count", got)
	}
}

func TestEachMessageAndLevelHasItsOwnWindow(t *testing.T) {
	l, buf, _ := newTestLogger(time.Minute)
	l.Log(kgo.LogLevelWarn, "share fetch decode error on batch; releasing affected offsets", "topic", "orders")
	l.Log(kgo.LogLevelWarn, "broker share fetch response had degenerate AcquiredRecords ranges")
	l.Log(kgo.LogLevelError, "share fetch decode error on batch; releasing affected offsets")
	l.Log(kgo.LogLevelWarn, "share fetch decode error on batch; releasing affected offsets", "topic", "orders")
	got := lines(buf)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3 (two messages, and one of them again at another level):\n%s", len(got), buf)
	}
	if !strings.HasPrefix(got[2], "level=ERROR") {
		t.Fatalf("franz-go's error is written as %q; want level=ERROR", got[2])
	}
}

func TestInfoAndDebugAreNeitherAskedForNorWritten(t *testing.T) {
	l, buf, _ := newTestLogger(0)
	if l.Level() != kgo.LogLevelWarn {
		t.Fatalf("Level() = %v; franz-go would format its per-request lines", l.Level())
	}
	l.Log(kgo.LogLevelInfo, "metadata update triggered")
	l.Log(kgo.LogLevelDebug, "wrote request")
	if buf.Len() != 0 {
		t.Fatalf("info and debug written: %s", buf)
	}
	l.Log(kgo.LogLevelWarn, "w")
	l.Log(kgo.LogLevelWarn, "w")
	if got := lines(buf); len(got) != 2 {
		t.Fatalf("a window of 0 held lines back: %q", got)
	}
}

func TestTheMemoryOfMessagesIsBounded(t *testing.T) {
	l, _, _ := newTestLogger(time.Hour)
	for i := range 3 * maxKeys {
		l.Log(kgo.LogLevelWarn, strings.Repeat("x", i%97)+string(rune('a'+i%26))+time.Duration(i).String())
	}
	if n := len(l.seen); n > maxKeys {
		t.Fatalf("%d messages remembered, want at most %d", n, maxKeys)
	}
}
