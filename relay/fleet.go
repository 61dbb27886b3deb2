package relay

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sharerelay/sharerelay/sharegroup"
)

// The relay instances in a share group share its record locks
// (sharegroup.Size), so the size of each worker's share consumers depends
// on how many there are. watchFleet counts them while the relay runs and,
// once a new count has held for fleetSettle, publishes the new size
// (wantSize); each worker moves to it at its next batch boundary
// (resize.go). A fleet that grows then gives its newcomers their share of
// the locks, and one that shrinks lets its survivors take the locks the
// leavers freed.

const (
	// fleetEvery is how often the relay counts the instances in its
	// share group (one DescribeShareGroups request).
	fleetEvery = 5 * time.Second
	// fleetSettle is how long a new size must hold before the workers
	// move to it: a member that comes and goes (a pod crash-looping, a
	// session expiring late) does not make every worker replace its
	// consumers each time, and a scale step of several pods, which join
	// one after the other, is one resize.
	fleetSettle = 10 * time.Second
)

// wantSize is the size each worker's share consumers are to have now.
func (r *Relay) wantSize() size { return *r.target.Load() }

// settler holds a new size back until it has been seen for settle: the
// hysteresis of watchFleet.
type settler struct {
	settle time.Duration
	next   size
	since  time.Time
	seen   bool
}

// observe records that s is what sizing asks for at now, while the
// workers have cur, and reports whether the workers should move to s now:
// s differs from cur and has been asked for, without interruption, for
// settle. Any other size seen in between starts the wait again.
func (h *settler) observe(now time.Time, cur, s size) bool {
	if s == cur {
		h.seen = false
		return false
	}
	if !h.seen || s != h.next {
		h.next, h.since, h.seen = s, now, true
	}
	if now.Sub(h.since) < h.settle {
		return false
	}
	h.seen = false
	return true
}

// watchFleet counts the relay instances in the share group every
// interval, and moves the workers to the size sizing chooses for them
// (sharegroup.Size) once it has held for settle, logging each change once.
// A group that cannot be described leaves the size as it is.
func (r *Relay) watchFleet(ctx context.Context, interval, settle time.Duration) error {
	h := &settler{settle: settle}
	instances := r.instances
	return r.every(ctx, interval, r.sourceClientOpts, func(cl *kgo.Client) error {
		d, _, err := r.demand(ctx, cl, *r.groupLimits.Load(), r.parts)
		if err != nil {
			r.log.Debug("counting the relay instances in the share group", "err", err)
			return nil
		}
		s := sharegroup.Size(d)
		cur, next := r.wantSize(), size{s.Consumers, s.MaxRecords}
		if !h.observe(time.Now(), cur, next) {
			return nil
		}
		r.target.Store(&next)
		r.log.Info("share consumers resized: "+s.Why,
			"instances", d.Instances, "from_instances", instances,
			"consumers", next.consumers, "max_records", next.maxRecords,
			"from_consumers", cur.consumers, "from_max_records", cur.maxRecords)
		instances = d.Instances
		return nil
	})
}
