package act

import (
	"context"
	"sync"
	"time"
)

// due is the deadline of a replacement under way, which a later word of
// the cloud can bring forward (a rebalance recommendation, then the
// instance shutting down): the drain under way ends at the new one.
type due struct {
	mu sync.Mutex
	at time.Time
	// changed is closed, and replaced, when at changes.
	changed chan struct{}
}

func newDue(at time.Time) *due { return &due{at: at, changed: make(chan struct{})} }

func (d *due) get() (time.Time, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at, d.changed
}

// bringForward sets the deadline to at when at comes sooner (zero: none,
// after every other); it reports whether it did.
func (d *due) bringForward(at time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if at.IsZero() || !d.at.IsZero() && !at.Before(d.at) {
		return false
	}
	d.at = at
	close(d.changed)
	d.changed = make(chan struct{})
	return true
}

// passed reports whether the deadline has come by now.
func (d *due) passed(now time.Time) bool {
	at, _ := d.get()
	return !at.IsZero() && !now.Before(at)
}

// untilDue is ctx ended once the deadline passes, as it is brought
// forward meanwhile; without one it ends with ctx.
func (a *Live) untilDue(ctx context.Context, d *due) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			at, changed := d.get()
			var timer <-chan time.Time
			if !at.IsZero() {
				left := at.Sub(a.Clock.Now())
				if left <= 0 {
					cancel()
					return
				}
				timer = a.Clock.After(left)
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-timer:
				cancel()
				return
			}
		}
	}()
	return ctx, cancel
}
