package consolidate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestSettle: a draining replacement holds its nodes until the old nodes'
// removals ended and no pod of a moved pod's controller waits for a node,
// or the wait ran out.
func TestSettle(t *testing.T) {
	w := &world{}
	w.fill("big-0", "web", 1, "2", nil)
	w.fill("big-0", "api", 1, "2", nil)
	moved := &world{}
	moved.fill("", "web", 1, "2", nil) // web's pod recreated, not placed yet
	other := &world{}
	other.fill("", "batch", 2, "1", nil) // another controller's
	bare := &world{}
	bare.fill("", "web", 1, "2", func(p *corev1.Pod) { p.OwnerReferences = nil })
	f := InFlight{Replacement: Replacement{Old: []Old{{Node: "big-0", Group: "big"}}, Group: "small", Count: 1},
		Draining: now, New: []string{"small-a"}}
	f.Old[0].Pods.ToMove = w.pods
	timeout := 10 * time.Minute
	cases := []struct {
		name     string
		removing []string
		pending  []*corev1.Pod
		at       time.Duration
		settled  bool
		why      string
	}{
		{"old node still draining", []string{"other", "big-0"}, nil, time.Minute, false, "old node big-0 is still being drained"},
		{"drained, a moved pod waits", nil, moved.pods, time.Minute, false, "1 moved pod(s) wait for a node"},
		{"drained, only other controllers' pods wait", []string{"other"}, other.pods, time.Minute, true, ""},
		{"a pod without a controller is no moved pod", nil, bare.pods, time.Minute, true, ""},
		{"drained and placed", nil, nil, time.Second, true, ""},
		{"still draining at the timeout", []string{"big-0"}, nil, timeout, true, "let go after 10m0s: old node big-0 is still being drained"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			settled, why := Settle(f, Settling{Removing: tc.removing, Pending: tc.pending, Now: now.Add(tc.at), Timeout: timeout})
			if settled != tc.settled || why != tc.why {
				t.Fatalf("settled %v (%q), want %v (%q)", settled, why, tc.settled, tc.why)
			}
		})
	}
}

// TestProtectedWhileDraining: once draining, the new nodes named then and
// the old nodes are held; a node the group gained later is not.
func TestProtectedWhileDraining(t *testing.T) {
	s := State{InFlight: &InFlight{Replacement: Replacement{Old: []Old{{Node: "big-0"}}}, Before: []string{"small-old"}}, Failures: 2}
	s = s.Drain(now, []string{"small-a"})
	got := s.InFlight.Protected([]string{"small-old", "small-a", "small-later"})
	if len(got) != 2 || !got["small-a"] || !got["big-0"] {
		t.Fatalf("protected %v, want small-a and big-0", got)
	}
	if s.Failures != 0 || !s.InFlight.Draining.Equal(now) {
		t.Fatalf("state %+v, want draining since now, failures reset", s)
	}
}
