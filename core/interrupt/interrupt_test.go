package interrupt

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	spot := func(id, inst string, deadline time.Time) cloudprovider.Interruption {
		return cloudprovider.Interruption{ID: id, Kind: cloudprovider.SpotInterruption, Instances: []string{inst}, Deadline: deadline}
	}
	nodes := []Node{
		{Name: "a", ProviderID: "aws:///us-east-1a/i-0a", Group: "spot"},
		{Name: "b", ProviderID: "aws:///us-east-1a/i-0b", Group: "spot"},
		{Name: "stray", ProviderID: "aws:///us-east-1a/i-0c"},
	}
	for _, tc := range []struct {
		name    string
		in      Input
		act     []string
		fresh   []bool
		nodes   map[string][]string
		foreign map[string][]string
	}{{
		name:  "a spot warning marks its node",
		in:    Input{Interruptions: []cloudprovider.Interruption{spot("m1", "i-0a", now.Add(2*time.Minute))}, Nodes: nodes, Now: now},
		act:   []string{"a"},
		fresh: []bool{true},
		nodes: map[string][]string{"m1": {"a"}}, foreign: map[string][]string{},
	}, {
		name: "an instance of no node group, or of no node, is not acted on",
		in: Input{Interruptions: []cloudprovider.Interruption{spot("m1", "i-0c", now), spot("m2", "i-0zz", now)},
			Nodes: nodes, Now: now},
		nodes: map[string][]string{"m1": {}, "m2": {}}, foreign: map[string][]string{"m1": {"i-0c"}, "m2": {"i-0zz"}},
	}, {
		name: "a node told twice keeps the earliest deadline; the soonest is first",
		in: Input{Interruptions: []cloudprovider.Interruption{
			{ID: "r", Kind: cloudprovider.RebalanceRecommendation, Instances: []string{"i-0b"}},
			spot("m1", "i-0a", now.Add(2*time.Minute)), spot("m2", "i-0b", now.Add(time.Minute)),
		}, Nodes: nodes, Now: now},
		act: []string{"b", "a"}, fresh: []bool{true, true},
		nodes: map[string][]string{"r": {"b"}, "m1": {"a"}, "m2": {"b"}}, foreign: map[string][]string{},
	}, {
		name: "a marked node no removal owns is drained again (restart); one under way is left",
		in: Input{Nodes: []Node{
			{Name: "a", ProviderID: "aws:///z/i-0a", Group: "g", Mark: &Mark{Kind: cloudprovider.SpotInterruption}},
			{Name: "b", ProviderID: "aws:///z/i-0b", Group: "g", Mark: &Mark{Kind: cloudprovider.SpotInterruption}, Removing: true},
		}, Now: now},
		act: []string{"a"}, fresh: []bool{false},
		nodes: map[string][]string{}, foreign: map[string][]string{},
	}, {
		name: "a later message about a marked node changes nothing",
		in: Input{Interruptions: []cloudprovider.Interruption{{ID: "r", Kind: cloudprovider.RebalanceRecommendation, Instances: []string{"i-0a"}}},
			Nodes: []Node{{Name: "a", ProviderID: "aws:///z/i-0a", Group: "g", Removing: true,
				Mark: &Mark{Kind: cloudprovider.SpotInterruption, Deadline: now}}}, Now: now},
		nodes: map[string][]string{"r": {"a"}}, foreign: map[string][]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			var act []string
			var fresh []bool
			for _, a := range d.Act {
				act, fresh = append(act, a.Node), append(fresh, a.New)
			}
			if !slices.Equal(act, tc.act) || !slices.Equal(fresh, tc.fresh) {
				t.Errorf("act %v new %v, want %v %v", act, fresh, tc.act, tc.fresh)
			}
			if len(d.Nodes) != len(tc.nodes) || len(d.Foreign) != len(tc.foreign) {
				t.Fatalf("nodes %v foreign %v, want %v %v", d.Nodes, d.Foreign, tc.nodes, tc.foreign)
			}
			for id, want := range tc.nodes {
				if !slices.Equal(d.Nodes[id], want) {
					t.Errorf("nodes of %s: %v, want %v", id, d.Nodes[id], want)
				}
			}
			for id, want := range tc.foreign {
				if !slices.Equal(d.Foreign[id], want) {
					t.Errorf("foreign of %s: %v, want %v", id, d.Foreign[id], want)
				}
			}
		})
	}
}

func TestActedWaitsForEveryNode(t *testing.T) {
	d := Decision{Nodes: map[string][]string{"m1": {"a", "b"}, "m2": {"c"}, "m3": {}}}
	got := Acted(d, map[string]error{"b": errors.New("conflict")})
	if !slices.Equal(got, []string{"m2", "m3"}) {
		t.Fatalf("Acted = %v, want [m2 m3]: m1 waits for node b", got)
	}
}

func TestEvictUntil(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		deadline time.Time
		want     time.Time
	}{
		{time.Time{}, now.Add(2 * time.Minute)},
		{now.Add(time.Minute), now.Add(time.Minute)},
		{now.Add(time.Hour), now.Add(2 * time.Minute)},
		{now.Add(-time.Second), now.Add(-time.Second)},
	} {
		if got := EvictUntil(Mark{Deadline: tc.deadline}, now, 2*time.Minute); !got.Equal(tc.want) {
			t.Errorf("EvictUntil(deadline %v) = %v, want %v", tc.deadline, got, tc.want)
		}
	}
}

func TestMarkRoundTripAndDamage(t *testing.T) {
	m := Mark{Kind: cloudprovider.SpotInterruption, Deadline: time.Unix(100, 0).UTC(), Received: time.Unix(50, 0).UTC(), Message: "x"}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{Annotation: m.Value()}}}
	got, found, err := MarkOf(n)
	if err != nil || !found || got != m {
		t.Fatalf("MarkOf = %+v %v %v, want %+v", got, found, err, m)
	}
	n.Annotations[Annotation] = "{"
	if got, found, err := MarkOf(n); err == nil || !found || got.Kind != "unknown" {
		t.Fatalf("damaged annotation: %+v %v %v, want a mark of kind unknown and an error", got, found, err)
	}
}

func TestReplaced(t *testing.T) {
	owned := func(name, kind string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: "o", Controller: ptr.To(true)}}}}
	}
	done := owned("done", "ReplicaSet")
	done.Status.Phase = corev1.PodSucceeded
	mirror := owned("mirror", "Node")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	got := Replaced([]*corev1.Pod{owned("web", "ReplicaSet"), owned("ds", "DaemonSet"), done, mirror, bare, owned("db", "StatefulSet")})
	var names []string
	for _, p := range got {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"web", "db"}) {
		t.Fatalf("Replaced = %v, want [web db]", names)
	}
}
