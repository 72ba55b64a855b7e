package core

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// The node loop wakes when an unneeded node becomes due for removal
// (scaledown.Removals' NextDue, which waits for cooldowns), not at its next
// scan; a due time past or beyond the scan changes nothing. It wakes too
// when a schedule window opens or closes (lead time included) or an
// allocation trigger comes due, before the next scan.
func TestNodeLoopWakesWhenANodeIsDue(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name           string
		due, scheduled time.Time
		wantSleep      time.Duration
	}{
		{"nothing due", time.Time{}, time.Time{}, 10 * time.Second},
		{"due in 3s", now.Add(3 * time.Second), time.Time{}, 3*time.Second + 10*time.Millisecond},
		{"due beyond the scan", now.Add(25 * time.Second), time.Time{}, 10 * time.Second},
		{"a due time left from an iteration that never reached scale-down", now.Add(-time.Second), time.Time{}, 10 * time.Second},
		{"a window opens in 4s", time.Time{}, now.Add(4 * time.Second), 4*time.Second + 10*time.Millisecond},
		{"a node due before the window", now.Add(3 * time.Second), now.Add(4 * time.Second), 3*time.Second + 10*time.Millisecond},
		{"a schedule change beyond the scan", time.Time{}, now.Add(time.Hour), 10 * time.Second},
		{"a schedule change already past: at once", time.Time{}, now.Add(-time.Second), 10 * time.Millisecond},
	} {
		l := &NodeLoop{clock: clocktesting.NewFakeClock(now), opts: Options{ScanInterval: 10 * time.Second},
			d: &Decider{wake: wake{scaleDownDue: tc.due}, sched: &schedules{next: tc.scheduled}}}
		if got := l.nextWait(); got != tc.wantSleep {
			t.Errorf("%s: sleeps %v, want %v", tc.name, got, tc.wantSleep)
		}
	}
}

// After a decision that found pending pods a place on ready nodes, the
// loop looks again soon, then less often while it stays so; pods that
// await upcoming nodes, or no such pods, need no recheck.
func TestNextRecheck(t *testing.T) {
	scan := 10 * time.Second
	fits := &scaleup.Plan{FitExisting: 2, Awaiting: map[types.UID]string{"a": "g"}}
	awaits := &scaleup.Plan{FitExisting: 1, Awaiting: map[types.UID]string{"a": "g"}}
	for _, tc := range []struct {
		name string
		plan *scaleup.Plan
		last time.Duration
		want time.Duration
	}{
		{"no decision", nil, 0, 0},
		{"nothing pending fits", &scaleup.Plan{}, 4 * time.Second, 0},
		{"pods await upcoming nodes only", awaits, 0, 0},
		{"first time", fits, 0, 2 * time.Second},
		{"again", fits, 2 * time.Second, 4 * time.Second},
		{"up to the scan interval", fits, 8 * time.Second, scan},
		{"stays at the scan interval", fits, scan, scan},
	} {
		if got := nextRecheck(tc.plan, tc.last, scan); got != tc.want {
			t.Errorf("%s: recheck after %v, want %v", tc.name, got, tc.want)
		}
	}
	l := &NodeLoop{clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), opts: Options{ScanInterval: scan},
		d: &Decider{wake: wake{recheck: 2 * time.Second}}}
	if got := l.nextWait(); got != 2*time.Second {
		t.Fatalf("with a recheck due in 2s the loop sleeps %v", got)
	}
}
