package scaledown

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// ownedBy makes a pod one of controller uid's (its owner reference, or a
// new one), created at created (as the
// API server stores it: to the second).
func ownedBy(uid types.UID, created time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if len(p.OwnerReferences) == 0 {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(uid),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		}
		p.OwnerReferences[0].UID = uid
		p.CreationTimestamp = metav1.NewTime(created.Truncate(time.Second))
	}
}

// A node where a pod the scale-down under way moved runs, or arrives,
// stays until that scale-down is over, wherever the scheduler put the pod:
// no pod is evicted twice by one scale-down.
func TestMovedPodsHoldTheirNode(t *testing.T) {
	evictedAt := now.Add(700 * time.Millisecond)
	for _, tc := range []struct {
		name    string
		evicted map[types.UID]time.Time
		// created is when cand's pod of rs-web was created, from now.
		created time.Duration
		// arriving: a pod of rs-web created after the eviction is about
		// to be bound to cand.
		arriving bool
		cpu      string // of cand's pod
		want     string // cand's fate: "unneeded" or its reason's prefix
	}{
		{name: "no scale-down under way", created: time.Minute, cpu: "1", want: "unneeded"},
		{name: "its controller's pod was evicted before it was created", evicted: map[types.UID]time.Time{"rs-web": evictedAt},
			created: 2 * time.Second, cpu: "1", want: "HoldsMovedPod: pod default/web-"},
		{name: "created in the second of the eviction (stored to the second)", evicted: map[types.UID]time.Time{"rs-web": evictedAt},
			created: 900 * time.Millisecond, cpu: "1", want: "HoldsMovedPod"},
		{name: "created before the eviction: a sibling that did not move", evicted: map[types.UID]time.Time{"rs-web": evictedAt},
			created: -time.Hour, cpu: "1", want: "unneeded"},
		{name: "another controller's pod was evicted", evicted: map[types.UID]time.Time{"rs-api": evictedAt},
			created: 2 * time.Second, cpu: "1", want: "unneeded"},
		{name: "a moved pod arriving on the node holds it too", evicted: map[types.UID]time.Time{"rs-web": evictedAt},
			created: -time.Hour, arriving: true, cpu: "1", want: "HoldsMovedPod: pod default/moved"},
		{name: "a node not underutilized says so first", evicted: map[types.UID]time.Time{"rs-web": evictedAt},
			created: 2 * time.Second, cpu: "3", want: "NotUnderutilized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.node("stay", "8")
			c.node("cand", "4")
			c.pod("stay", "db", "1", nil)
			c.pod("cand", "web", tc.cpu, ownedBy("rs-web", now.Add(tc.created)))
			plan := c.plan([]string{"cand"}, func(in *Input) {
				in.Evicted = tc.evicted
				if tc.arriving {
					p := c.pendingPod("moved", "web", "100m")
					ownedBy("rs-web", now.Add(time.Second))(p)
					in.Arriving = []simulator.Placed{arrivingOn(t, p, "cand")}
				}
			})
			got := reasonOf(plan, "cand")
			if len(plan.Unneeded) == 1 {
				got = "unneeded"
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("cand: %q, want %q", got, tc.want)
			}
		})
	}
}

// The planner's memory plans again when the evictions of the scale-down
// under way change, and not when they are the same map anew.
func TestPlannerPlansAgainWhenEvictionsChange(t *testing.T) {
	c := newCluster(t)
	c.node("stay", "8")
	c.node("cand", "4")
	c.pod("cand", "web", "1", ownedBy("rs-web", now.Add(2*time.Second)))
	in := c.input([]string{"cand"})
	var p Planner
	plan := func(evicted map[types.UID]time.Time) (string, bool) {
		in.Evicted = evicted
		got, reused, err := p.Plan(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(unneeded(got)), reused
	}
	if got, _ := plan(nil); got != "[cand]" {
		t.Fatalf("unneeded %s, want [cand]", got)
	}
	if got, reused := plan(map[types.UID]time.Time{"rs-web": now}); reused || got != "[]" {
		t.Fatalf("unneeded %s (reused %v), want [] planned again", got, reused)
	}
	if _, reused := plan(map[types.UID]time.Time{"rs-web": now}); !reused {
		t.Fatal("the same evictions planned again, want the plan reused")
	}
}

func TestEvictedSince(t *testing.T) {
	evs := []Eviction{{"rs-a", now.Add(-time.Hour)}, {"rs-a", now.Add(3 * time.Second)}, {"rs-a", now.Add(time.Second)},
		{"rs-b", now.Add(-time.Minute)}, {"rs-c", now}}
	got := EvictedSince(evs, now)
	want := map[types.UID]time.Time{"rs-a": now.Add(time.Second), "rs-c": now}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("evicted %v, want %v (the first of each controller's at or after since)", got, want)
	}
}

func TestPlacing(t *testing.T) {
	evicted := map[types.UID]time.Time{"rs-web": now}
	pending := func(name string, edit func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		edit(p)
		return p
	}
	pods := []*corev1.Pod{
		pending("replacement", ownedBy("rs-web", now.Add(time.Second))),
		pending("older", ownedBy("rs-web", now.Add(-time.Minute))),
		pending("other", ownedBy("rs-api", now.Add(time.Second))),
		pending("bound", func(p *corev1.Pod) { ownedBy("rs-web", now.Add(time.Second))(p); p.Spec.NodeName = "n" }),
		pending("bare", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(time.Second)) }),
	}
	if got := Placing(pods, evicted); got != 1 {
		t.Fatalf("placing %d, want 1 (only the replacement)", got)
	}
	if got := Placing(pods, nil); got != 0 {
		t.Fatalf("placing %d with no eviction, want 0", got)
	}
}

// A scale-down is over when nothing of it is under way or to come: then
// the pods it moved may be moved by the next.
func TestSettled(t *testing.T) {
	full := Unneeded{Node: "full", Group: "g", Pods: NodePods{ToMove: []*corev1.Pod{{}}}}
	empty := Unneeded{Node: "empty", Group: "g"}
	for _, tc := range []struct {
		name     string
		unneeded []Unneeded
		since    time.Duration // how long ago they became unneeded
		drains   int
		placing  int
		start    []Removal
		waiting  string
		want     bool
	}{
		{name: "nothing under way or unneeded", want: true},
		{name: "a drain under way", drains: 1},
		{name: "a moved pod waits for a node", placing: 1},
		{name: "a drain starts now", start: []Removal{{Unneeded: full, Evict: full.Pods.ToMove}}},
		{name: "an empty node's removal starts now", start: []Removal{{Unneeded: empty}}, want: true},
		{name: "a node with pods to move is not due yet", unneeded: []Unneeded{full}, since: time.Second},
		{name: "a node with pods to move waits for a cooldown", unneeded: []Unneeded{full}, since: time.Hour,
			waiting: "--scale-down-delay-after-delete since the last removal"},
		{name: "a node due but held back by a budget", unneeded: []Unneeded{full}, since: time.Hour, want: true},
		{name: "an empty node not due yet", unneeded: []Unneeded{empty}, since: time.Second, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			track := Tracking{}
			for _, u := range tc.unneeded {
				track[u.Node] = now.Add(-tc.since)
			}
			in := RemovalInput{Plan: &Plan{Unneeded: tc.unneeded}, Tracking: track, Groups: map[string]Times{"g": {Unneeded: time.Minute}},
				Placing: tc.placing, Now: now}
			if got := Settled(in, RemovalDecision{Start: tc.start, Waiting: tc.waiting}, tc.drains); got != tc.want {
				t.Fatalf("settled %v, want %v", got, tc.want)
			}
		})
	}
}

// Two drains of one wave never count on the same free room: the removals
// of one plan take their room one after the other, and a drain under way
// keeps the room of the pods it has yet to evict. Where there is room for
// one drain only, one node is unneeded.
func TestDrainsOfAWaveNeverShareRoom(t *testing.T) {
	for _, tc := range []struct {
		name string
		free string // on the node that stays
		// draining: a is being drained (its pod still to evict), b alone
		// is a candidate.
		draining bool
		want     int // unneeded nodes
	}{
		{name: "room for both", free: "5", want: 2},
		{name: "room for one", free: "4", want: 1},
		{name: "room for one, just", free: "2500m", want: 1},
		{name: "room for none", free: "2", want: 0},
		{name: "a drain under way took the room for one", free: "4", draining: true, want: 0},
		{name: "a drain under way left room for another", free: "5", draining: true, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.node("stay", tc.free)
			// 2.5 of 4 CPU: underutilized at the threshold of 0.7, and
			// neither fits on the other.
			c.node("a", "4")
			c.node("b", "4")
			c.pod("a", "web", "2500m", nil)
			c.pod("b", "web", "2500m", nil)
			cands := []string{"a", "b"}
			if tc.draining {
				cands = []string{"b"}
			}
			plan := c.plan(cands, func(in *Input) {
				for i := range in.Candidates {
					in.Candidates[i].Threshold = 0.7
				}
				if tc.draining {
					in.Deleting = []string{"a"}
				}
			})
			if len(plan.Unneeded) != tc.want {
				t.Fatalf("unneeded %v (%v), want %d", unneeded(plan), plan.Unremovable, tc.want)
			}
			// The pods counting on the room add up to no more than it.
			needs := 2500 * (len(plan.Unneeded) + plan.Reserved)
			if room := c.snap.NodeInfo("stay").Allocatable.MilliCPU; int64(needs) > room {
				t.Fatalf("%d mCPU of pods count on %d mCPU of room", needs, room)
			}
			for _, u := range plan.Unremovable {
				if !strings.HasPrefix(u.String(), string(NoPlaceToMovePods)) {
					t.Fatalf("%s: %s, want NoPlaceToMovePods", u.Node, u)
				}
			}
		})
	}
}
