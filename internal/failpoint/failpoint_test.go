package failpoint

import (
	"errors"
	"testing"
	"time"
)

func TestAnErrorFailpointFiresOnlyOnItsHit(t *testing.T) {
	defer Disable()
	if err := Enable("x=error@2"); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for i := 0; i < 4; i++ {
		got = append(got, errors.Is(Hit("x"), ErrInjected))
	}
	if want := []bool{false, true, false, false}; !equal(got, want) {
		t.Fatalf("hits fired %v, want %v", got, want)
	}
	if Hit("other") != nil {
		t.Fatal("an unknown failpoint fired")
	}
}

func TestAPlusSuffixFiresFromTheNthHitOn(t *testing.T) {
	defer Disable()
	if err := Enable("x=error@3+"); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for i := 0; i < 5; i++ {
		got = append(got, Hit("x") != nil)
	}
	if want := []bool{false, false, true, true, true}; !equal(got, want) {
		t.Fatalf("hits fired %v, want %v", got, want)
	}
}

func TestSleepBlocksForItsDuration(t *testing.T) {
	defer Disable()
	if err := Enable("x=sleep(50ms)"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Hit("x"); err != nil || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("sleep failpoint: err %v after %s", err, time.Since(start))
	}
}

func TestBadSpecsAreRefused(t *testing.T) {
	for _, spec := range []string{"x", "x=explode", "x=error@0", "x=sleep(forever)", "x=error@a"} {
		if err := Enable(spec); err == nil {
			t.Errorf("Enable(%q) accepted a bad spec", spec)
		}
	}
	Disable()
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
