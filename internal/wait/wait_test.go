package wait

import (
	"context"
	"testing"
	"time"
)

func TestSleepWaitsTheWholeDurationWhenNothingCancels(t *testing.T) {
	start := time.Now()
	if !Sleep(context.Background(), 20*time.Millisecond) {
		t.Fatal("Sleep reported a cut-short wait without a cancel")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Sleep returned after %s, before its 20ms", d)
	}
}

func TestSleepReturnsFalseAtOnceWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep reported a whole wait on a cancelled context")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Sleep on a cancelled context took %s", d)
	}
}
