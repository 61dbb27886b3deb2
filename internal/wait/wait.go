// Package wait holds the one cancellable sleep every backoff of the relay
// uses.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or less when ctx ends first; it reports whether it waited
// all of d. A backoff loop stops on false: the caller is shutting down.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
