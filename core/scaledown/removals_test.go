package scaledown

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestTrack(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	plan := &Plan{Unneeded: []Unneeded{{Node: "kept"}, {Node: "new"}, {Node: "restarted"}, {Node: "future-taint"}}}
	prev := Tracking{"kept": t0.Add(-5 * time.Minute), "needed-again": t0.Add(-time.Hour)}
	tainted := map[string]time.Time{"restarted": t0.Add(-8 * time.Minute), "future-taint": t0.Add(time.Minute),
		"kept": t0.Add(-20 * time.Minute)}
	got := Track(prev, plan, tainted, t0)
	want := Tracking{"kept": t0.Add(-5 * time.Minute), "new": t0, "restarted": t0.Add(-8 * time.Minute), "future-taint": t0}
	if len(got) != len(want) {
		t.Fatalf("tracking %v, want %v", got, want)
	}
	for node, since := range want {
		if !got[node].Equal(since) {
			t.Errorf("%s: unneeded since %v, want %v", node, got[node], since)
		}
	}
}

func TestRemovals(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)}}
	}
	unneeded := func(node, group string, pods ...*corev1.Pod) Unneeded {
		return Unneeded{Node: node, Group: group, Pods: NodePods{ToMove: pods}}
	}
	unready := func(u Unneeded) Unneeded { u.Unready = true; return u }
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	base := func() RemovalInput {
		return RemovalInput{
			Groups:      map[string]Times{"g": {Unneeded: 10 * time.Second, Unready: time.Minute}, "slow": {Unneeded: time.Hour}},
			Delays:      Delays{AfterAdd: 10 * time.Second, AfterDelete: 20 * time.Second, AfterFailure: 30 * time.Second},
			Parallelism: 10, DrainParallelism: 5, Cluster: Resources{MilliCores: 100_000, Memory: 100 << 30},
			Pictured: map[types.UID]bool{"headroom": true}, Now: now,
			Capacity: map[string]Resources{"a": {4000, 16 << 30}, "b": {4000, 16 << 30}, "c": {4000, 16 << 30}, "d": {4000, 16 << 30}},
		}
	}
	for _, tc := range []struct {
		name    string
		plan    []Unneeded
		since   Tracking
		edit    func(*RemovalInput)
		start   []string // node:kind
		waiting string
		due     time.Duration // from now; 0: none
	}{
		{name: "nothing unneeded"},
		{name: "not long enough: due at the earliest", plan: []Unneeded{unneeded("a", "g"), unneeded("b", "g")},
			since: Tracking{"a": ago(3 * time.Second), "b": ago(7 * time.Second)}, due: 3 * time.Second},
		{name: "due now; the next one wakes the loop", plan: []Unneeded{unneeded("a", "g"), unneeded("b", "g")},
			since: Tracking{"a": ago(3 * time.Second), "b": ago(10 * time.Second)}, start: []string{"b:empty"}, due: 7 * time.Second},
		{name: "unready uses its own time", plan: []Unneeded{unready(unneeded("c", "g")), unready(unneeded("d", "g", pod("web")))},
			since: Tracking{"c": ago(55 * time.Second), "d": ago(time.Minute)}, start: []string{"d:unready[web]"}, due: 5 * time.Second},
		{name: "each group its own time", plan: []Unneeded{unneeded("a", "slow"), unneeded("b", "g")},
			since: Tracking{"a": ago(30 * time.Minute), "b": ago(30 * time.Minute)}, start: []string{"b:empty"}, due: 30 * time.Minute},
		{name: "not tracked, or its group gone: never", plan: []Unneeded{unneeded("a", "g"), unneeded("b", "gone")},
			since: Tracking{"b": ago(time.Hour)}},
		{name: "node gone", plan: []Unneeded{unneeded("x", "g")}, since: Tracking{"x": ago(time.Hour)}},
		{name: "kinds: pictured pods are not evicted", plan: []Unneeded{unneeded("a", "g", pod("headroom")), unneeded("b", "g", pod("web"), pod("headroom"))},
			since: Tracking{"a": ago(time.Minute), "b": ago(time.Minute)}, start: []string{"a:empty", "b:underutilized[web]"}},
		{name: "a scale-up in this iteration", plan: []Unneeded{unneeded("a", "g")}, since: Tracking{"a": ago(time.Minute)},
			edit: func(in *RemovalInput) { in.Cooldowns.ScaleUpNow = true }, waiting: "a scale-up was requested in this iteration"},
		{name: "after a scale-up: due when the cooldown ends", plan: []Unneeded{unneeded("a", "g"), unneeded("b", "g")},
			since:   Tracking{"a": ago(time.Minute), "b": ago(9 * time.Second)},
			edit:    func(in *RemovalInput) { in.Cooldowns.LastScaleUp = ago(3 * time.Second) },
			waiting: "--scale-down-delay-after-add since the last scale-up", due: 7 * time.Second},
		{name: "after a removal", plan: []Unneeded{unneeded("a", "g")}, since: Tracking{"a": ago(time.Minute)},
			edit:    func(in *RemovalInput) { in.Cooldowns.LastDelete = ago(19 * time.Second) },
			waiting: "--scale-down-delay-after-delete since the last removal"},
		{name: "after a failed removal", plan: []Unneeded{unneeded("a", "g")}, since: Tracking{"a": ago(time.Minute)},
			edit:    func(in *RemovalInput) { in.Cooldowns.LastFailure = ago(29 * time.Second) },
			waiting: "--scale-down-delay-after-failure since the last failed removal"},
		{name: "cooldowns over", plan: []Unneeded{unneeded("a", "g")}, since: Tracking{"a": ago(time.Minute)},
			edit: func(in *RemovalInput) {
				in.Cooldowns = Cooldowns{LastScaleUp: ago(10 * time.Second), LastDelete: ago(20 * time.Second), LastFailure: ago(time.Minute)}
			}, start: []string{"a:empty"}},
		{name: "parallelism: the plan's order", plan: []Unneeded{unneeded("a", "g"), unneeded("b", "g"), unneeded("c", "g")},
			since: Tracking{"a": ago(time.Minute), "b": ago(time.Minute), "c": ago(time.Minute)},
			edit:  func(in *RemovalInput) { in.Parallelism = 2 }, start: []string{"a:empty", "b:empty"}},
		{name: "drain parallelism: empty nodes still go", plan: []Unneeded{unneeded("a", "g", pod("web")), unneeded("b", "g", pod("api")), unneeded("c", "g")},
			since: Tracking{"a": ago(time.Minute), "b": ago(time.Minute), "c": ago(time.Minute)},
			edit:  func(in *RemovalInput) { in.DrainParallelism = 1 }, start: []string{"a:underutilized[web]", "c:empty"}},
		{name: "pods a drain moved wait for a node: no drain starts, empty nodes still go",
			plan:  []Unneeded{unneeded("a", "g", pod("web")), unneeded("c", "g")},
			since: Tracking{"a": ago(time.Minute), "c": ago(time.Minute)},
			edit:  func(in *RemovalInput) { in.Placing = 1 }, start: []string{"c:empty"}},
		{name: "no parallelism left", plan: []Unneeded{unneeded("a", "g")}, since: Tracking{"a": ago(time.Minute)},
			edit: func(in *RemovalInput) { in.Parallelism = 0 }},
		{name: "minimum cores", plan: []Unneeded{unneeded("a", "g"), unneeded("b", "g")},
			since: Tracking{"a": ago(time.Minute), "b": ago(time.Minute)},
			edit: func(in *RemovalInput) {
				in.Cluster.MilliCores, in.Min.MilliCores = 12_000, 5_000
			}, start: []string{"a:empty"}},
		{name: "minimum memory", plan: []Unneeded{unneeded("a", "g")}, since: Tracking{"a": ago(time.Minute)},
			edit: func(in *RemovalInput) { in.Cluster.Memory, in.Min.Memory = 20<<30, 5<<30 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			in.Plan, in.Tracking = &Plan{Unneeded: tc.plan}, tc.since
			if tc.edit != nil {
				tc.edit(&in)
			}
			got := Removals(in)
			var start []string
			for _, r := range got.Start {
				s := r.Node + ":" + r.Kind
				if len(r.Evict) > 0 {
					var names []string
					for _, p := range r.Evict {
						names = append(names, p.Name)
					}
					s += fmt.Sprint(names)
				}
				start = append(start, s)
			}
			if !slices.Equal(start, tc.start) {
				t.Errorf("started %v, want %v", start, tc.start)
			}
			if got.Waiting != tc.waiting {
				t.Errorf("waiting %q, want %q", got.Waiting, tc.waiting)
			}
			var wantDue time.Time
			if tc.due > 0 {
				wantDue = now.Add(tc.due)
			}
			if !got.NextDue.Equal(wantDue) {
				t.Errorf("next due %v, want %v", got.NextDue.Sub(now), tc.due)
			}
		})
	}
}
