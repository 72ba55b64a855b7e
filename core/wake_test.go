package core

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// The node loop wakes when an unneeded node becomes due for removal, not
// at its next scan, and never sooner than a cooldown allows.
func TestNodeLoopWakesWhenANodeIsDue(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := clocktesting.NewFakeClock(now)
	newLoop := func() *NodeLoop {
		return &NodeLoop{clock: clock, actuator: &actuator{},
			opts: Options{ScanInterval: 10 * time.Second, ScaleDown: ScaleDownOptions{UnneededTime: 10 * time.Second,
				UnreadyTime: time.Minute, DelayAfterAdd: 5 * time.Second}}}
	}
	plan := &scaledown.Plan{Unneeded: []scaledown.Unneeded{{Node: "a"}, {Node: "b"}, {Node: "c", Unready: true}}}
	o := &observation{now: now}
	tests := []struct {
		name      string
		since     map[string]time.Time
		started   []string
		lastUp    time.Time
		wantDue   time.Time
		wantSleep time.Duration
	}{
		{"nothing unneeded", nil, nil, time.Time{}, time.Time{}, 10 * time.Second},
		{"earliest node", map[string]time.Time{"a": now.Add(-3 * time.Second), "b": now.Add(-7 * time.Second)}, nil, time.Time{},
			now.Add(3 * time.Second), 3*time.Second + 10*time.Millisecond},
		{"node being removed ignored", map[string]time.Time{"a": now.Add(-3 * time.Second), "b": now.Add(-7 * time.Second)}, []string{"b"}, time.Time{},
			now.Add(7 * time.Second), 7*time.Second + 10*time.Millisecond},
		{"unready uses its own time", map[string]time.Time{"c": now.Add(-55 * time.Second)}, nil, time.Time{},
			now.Add(5 * time.Second), 5*time.Second + 10*time.Millisecond},
		{"already due: the scan decides", map[string]time.Time{"a": now.Add(-time.Minute)}, nil, time.Time{}, time.Time{}, 10 * time.Second},
		{"cooldown after a scale-up", map[string]time.Time{"a": now.Add(-9 * time.Second)}, nil, now.Add(2 * time.Second),
			now.Add(7 * time.Second), 7*time.Second + 10*time.Millisecond},
		{"beyond the scan interval", map[string]time.Time{"a": now}, nil, now.Add(20 * time.Second), now.Add(25 * time.Second), 10 * time.Second},
	}
	for _, tt := range tests {
		l := newLoop()
		l.unneededSince, l.lastScaleUp = tt.since, tt.lastUp
		l.scaleDownDue = l.nextScaleDownDue(o, plan, tt.started)
		if !l.scaleDownDue.Equal(tt.wantDue) {
			t.Errorf("%s: due %v, want %v", tt.name, l.scaleDownDue.Sub(now), tt.wantDue.Sub(now))
		}
		if got := l.nextWait(); got != tt.wantSleep {
			t.Errorf("%s: sleeps %v, want %v", tt.name, got, tt.wantSleep)
		}
	}
	// A due time left from an iteration that never reached scale-down does
	// not make the loop spin.
	l := newLoop()
	l.scaleDownDue = now.Add(-time.Second)
	if got := l.nextWait(); got != 10*time.Second {
		t.Fatalf("a past due time made the loop sleep %v", got)
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
	l := &NodeLoop{clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0)), opts: Options{ScanInterval: scan}, recheck: 2 * time.Second}
	if got := l.nextWait(); got != 2*time.Second {
		t.Fatalf("with a recheck due in 2s the loop sleeps %v", got)
	}
}
