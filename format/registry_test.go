package format_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sharerelay/sharerelay/config"
	"github.com/sharerelay/sharerelay/format"
	"github.com/sharerelay/sharerelay/internal/srtest"
)

func slowRegistry(t *testing.T) (*srtest.Registry, *format.Registry) {
	t.Helper()
	reg := srtest.New()
	t.Cleanup(reg.Close)
	for i := 0; i < 20; i++ {
		reg.Register("s", srtest.Schema{Schema: `{"type":"record","name":"R` + string(rune('a'+i)) + `","fields":[]}`})
	}
	r, err := format.NewRegistry(&config.SchemaRegistry{URLs: []string{reg.URL()}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return reg, r
}

// A registry that takes connections and never answers costs a batch one
// timeout, not one a record: the requests after the first fail at once
// for a second, and are not sent.
func TestAfterARegistryTimesOutTheNextRequestsFailAtOnce(t *testing.T) {
	reg, r := slowRegistry(t)
	reg.Delay(2 * time.Second)
	ctx := context.Background()
	start := time.Now()
	if _, err := r.SchemaByID(ctx, 1); !errors.Is(err, format.ErrUnavailable) {
		t.Fatalf("first: %v, want unavailable", err)
	}
	first := time.Since(start)
	sent := r.Requests()
	start = time.Now()
	for id := 2; id <= 20; id++ {
		if _, err := r.SchemaByID(ctx, id); !errors.Is(err, format.ErrUnavailable) {
			t.Fatalf("id %d: %v, want unavailable", id, err)
		}
	}
	if d := time.Since(start); d > first/2 {
		t.Fatalf("19 more ids took %s, the first %s: they waited for the registry again", d, first)
	}
	if n := r.Requests() - sent; n != 0 {
		t.Fatalf("%d more requests sent while failing fast", n)
	}
	reg.Delay(0)
	time.Sleep(1100 * time.Millisecond)
	if _, err := r.SchemaByID(ctx, 2); err != nil {
		t.Fatalf("after the fail-fast window: %v", err)
	}
}

// A caller told to stop does not wait for a registry that does not answer
// (a relay stopping while it holds records).
func TestACallerWhoseContextEndsStopsWaitingForTheRegistry(t *testing.T) {
	reg, r := slowRegistry(t)
	r2, err := format.NewRegistry(&config.SchemaRegistry{URLs: []string{reg.URL()}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = r
	reg.Delay(3 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r2.SchemaByID(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the caller's deadline", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("returned after %s, past its deadline", d)
	}
	reg.Delay(0)
}
