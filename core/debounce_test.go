package core

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// A burst of unschedulable pods is one decision, made within DebounceMax
// of the first: the loop waits for a quiet moment, but never longer than
// the limit however long the burst goes on. The times are the fake clock's.
func TestDebounceSettlesABurstWithinItsLimit(t *testing.T) {
	const quiet, limit = 250 * time.Millisecond, 800 * time.Millisecond
	tests := []struct {
		name string
		// triggers are when more pods become unschedulable, after the first.
		triggers []time.Duration
		want     time.Duration
	}{
		{"a lone pod: a quiet moment", nil, quiet},
		{"a burst that never pauses: the limit", []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 600 * time.Millisecond, 790 * time.Millisecond}, limit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1_800_000_000, 0)
			clock := clocktesting.NewFakeClock(start)
			l := &NodeLoop{clock: clock, trigger: make(chan struct{}, 1), opts: Options{Debounce: quiet, DebounceMax: limit}}
			done := make(chan time.Duration, 1)
			go func() {
				if l.debounce(context.Background()) {
					done <- clock.Since(start)
				}
			}()
			until(t, "the limit and the quiet timers", func() bool { return clock.Waiters() == 2 })
			at := time.Duration(0)
			for _, tr := range tc.triggers {
				clock.Step(tr - at)
				at = tr
				// Twice: the second is taken only once the loop has acted
				// on the first, so the quiet timer is reset before the
				// clock moves on.
				for range 2 {
					l.trigger <- struct{}{}
					until(t, fmt.Sprintf("the trigger at %v to be taken", tr), func() bool { return len(l.trigger) == 0 })
				}
				select {
				case got := <-done:
					t.Fatalf("settled at %v, in the middle of the burst", got)
				default:
				}
			}
			clock.Step(tc.want - at)
			select {
			case got := <-done:
				if got != tc.want {
					t.Fatalf("settled at %v, want %v", got, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("not settled at %v", tc.want)
			}
		})
	}
}

func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
