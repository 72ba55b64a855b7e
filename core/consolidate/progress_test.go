package consolidate

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func TestAdvance(t *testing.T) {
	f := InFlight{Replacement: Replacement{Old: []Old{{Node: "big-0", Group: "big"}}, Group: "small", Count: 2},
		Requested: now, Before: []string{"small-old"}}
	all := func(string) bool { return true }
	timeout := 15 * time.Minute
	cases := []struct {
		name    string
		nodes   []NodeState
		present func(string) bool
		at      time.Duration
		want    Step
	}{
		{"nothing yet", nil, all, time.Minute, StepWait},
		{"one of two Ready, one starting", []NodeState{{"small-a", true}, {"small-b", false}, {"small-old", true}}, all, time.Minute, StepWait},
		{"a node that was there before does not count", []NodeState{{"small-a", true}, {"small-old", true}}, all, time.Minute, StepWait},
		{"both Ready", []NodeState{{"small-b", true}, {"small-a", true}}, all, time.Minute, StepDrain},
		{"not Ready at the provision timeout", []NodeState{{"small-a", true}, {"small-b", false}}, all, timeout, StepTimedOut},
		{"an old node went", []NodeState{{"small-a", true}, {"small-b", true}}, func(n string) bool { return n != "big-0" }, time.Minute, StepAbandon},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Advance(f, tc.nodes, tc.present, now.Add(tc.at), timeout)
			if got.Step != tc.want {
				t.Fatalf("step %s (%s), want %s", got.Step, got.Why, tc.want)
			}
			if got.Step == StepDrain && strings.Join(got.New, ",") != "small-a,small-b" {
				t.Fatalf("new nodes %v, want small-a,small-b", got.New)
			}
		})
	}
}

func TestStateBacksOff(t *testing.T) {
	s := State{InFlight: &InFlight{}}
	s = s.Failed(now, time.Minute, 10*time.Minute)
	if s.InFlight != nil || !s.BackoffUntil.Equal(now.Add(time.Minute)) {
		t.Fatalf("after one failure: %+v, want backoff 1m", s)
	}
	for range 5 {
		s = s.Failed(now, time.Minute, 10*time.Minute)
	}
	if !s.BackoffUntil.Equal(now.Add(10 * time.Minute)) {
		t.Fatalf("after six failures: until %v, want capped at 10m", s.BackoffUntil)
	}
	if s = s.Done(now); s.Failures != 0 {
		t.Fatalf("done: %+v, want failures reset", s)
	}
}

// TestDoneIsFinishing: a settled replacement waits, with its kind, old
// nodes and saving, for its old nodes to go.
func TestDoneIsFinishing(t *testing.T) {
	s := State{InFlight: &InFlight{Replacement: Replacement{Kind: KindMulti, Saving: 0.62,
		Old: []Old{{Node: "big-0"}, {Node: "big-1"}}}}, Finishing: []Finishing{{Kind: KindSingle, Old: []string{"x"}}}}
	s = s.Done(now)
	if s.InFlight != nil || len(s.Finishing) != 2 {
		t.Fatalf("after Done: %+v, want nothing in flight and two finishing", s)
	}
	if f := s.Finishing[1]; f.Kind != KindMulti || f.Saving != 0.62 || strings.Join(f.Old, ",") != "big-0,big-1" || !f.Settled.Equal(now) {
		t.Fatalf("finishing %+v, want the multi replacement of big-0,big-1 saving 0.62 settled now", f)
	}
}

// TestFinished: a settled replacement is done once every old node is gone
// (not when one of two is), kept when one is still there after the
// timeout.
func TestFinished(t *testing.T) {
	timeout := 10 * time.Minute
	fs := []Finishing{
		{Kind: KindSingle, Old: []string{"gone"}, Saving: 0.31, Settled: now},
		{Kind: KindMulti, Old: []string{"gone", "there"}, Saving: 0.5, Settled: now},
		{Kind: KindSingle, Old: []string{"there"}, Saving: 0.2, Settled: now.Add(-timeout)},
	}
	present := func(n string) bool { return n == "there" }
	left, done, kept := Finished(fs, present, now, timeout)
	if len(done) != 1 || done[0].Saving != 0.31 {
		t.Fatalf("done %+v, want only the replacement whose old node is gone", done)
	}
	if len(left) != 1 || left[0].Saving != 0.5 {
		t.Fatalf("left %+v, want the multi replacement with one old node still there", left)
	}
	if len(kept) != 1 || kept[0].Saving != 0.2 {
		t.Fatalf("kept %+v, want the replacement whose old node is still there after %v", kept, timeout)
	}
	if left, done, kept := Finished(nil, present, now, timeout); len(left)+len(done)+len(kept) != 0 {
		t.Fatal("nothing finishing finishes nothing")
	}
}

func TestProtected(t *testing.T) {
	f := &InFlight{Replacement: Replacement{Old: []Old{{Node: "big-0"}}}, Before: []string{"small-old"}}
	got := f.Protected([]string{"small-old", "small-new"})
	if !got["small-new"] || !got["big-0"] || got["small-old"] {
		t.Fatalf("protected %v, want the new node and the old one", got)
	}
	if len((*InFlight)(nil).Protected([]string{"x"})) != 0 {
		t.Fatal("nothing in flight protects nothing")
	}
}

// TestRecheck: before the drain, the old node's pods as they are now must
// fit on the nodes that stay, the new one included.
func TestRecheck(t *testing.T) {
	w := apart(1)
	in := w.build(t, 3)
	plan := decide(t, in)
	if len(plan.Replacements) != 1 {
		t.Fatalf("want one replacement, got %q", summary(plan))
	}
	r := plan.Replacements[0]
	// The new node came: a small node.
	if _, err := in.Checker.Snapshot().AddNode(node("small-new", "small")); err != nil {
		t.Fatal(err)
	}
	got, why, err := Recheck(context.Background(), RecheckInput{Input: in, Replacement: r})
	if err != nil || why != "" {
		t.Fatalf("recheck with the new node: %q, %v; want the drain to go on", why, err)
	}
	if len(got.Pods()) != 2 {
		t.Fatalf("pods to evict %d, want 2", len(got.Pods()))
	}
	// A pod bound to the old node since the plan does not fit with the
	// others on the new node: the drain stops.
	extra := w.pods[0].DeepCopy()
	extra.Name, extra.UID, extra.Labels = "late", "late", map[string]string{"app": "late"}
	extra.Spec.Affinity = nil
	extra.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = *resourceCPU("3")
	info, _ := framework.NewPodInfo(extra)
	if err := in.Checker.Snapshot().AddPod(info, "big-0"); err != nil {
		t.Fatal(err)
	}
	in.Owners.Existing[ownerOf(extra)] = true
	if _, why, err = Recheck(context.Background(), RecheckInput{Input: in, Replacement: r}); err != nil || !strings.Contains(why, "fits on none") {
		t.Fatalf("recheck with a pod more: %q, %v; want the drain stopped", why, err)
	}
}
