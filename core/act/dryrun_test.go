package act

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// TestDryRunCountsAStandingDecisionOnce: a decision nothing acts on comes
// back every iteration; it is new only the first time, and again after an
// iteration that did not make it. A failed iteration forgets nothing.
func TestDryRunCountsAStandingDecisionOnce(t *testing.T) {
	d := newDryRun()
	steps := []struct {
		name    string
		keys    []string
		decided bool
		newKeys []string
	}{
		{"first decision", []string{"up/a"}, true, []string{"up/a"}},
		{"same decision again", []string{"up/a"}, true, nil},
		{"another joins", []string{"up/a", "down/n1"}, true, []string{"down/n1"}},
		{"iteration failed after deciding part", []string{"up/a"}, false, nil},
		{"both still stand", []string{"up/a", "down/n1"}, true, nil},
		{"one goes away", []string{"down/n1"}, true, nil},
		{"it comes back: new again", []string{"up/a", "down/n1"}, true, []string{"up/a"}},
	}
	for _, s := range steps {
		d.begin()
		var got []string
		for _, k := range s.keys {
			if d.note(k) {
				got = append(got, k)
			}
		}
		d.end(s.decided)
		if !slices.Equal(got, s.newKeys) {
			t.Errorf("%s: new decisions %v, want %v (standing before: %v)", s.name, got, s.newKeys, d.standingKeys())
		}
	}
}

// A scale-up for the same waiting pods and the same capacity is one
// standing decision whichever group the expander's tie-break picks, in
// whatever order the lister gives the pods; other pods, or more capacity,
// are a new one. A scale-up for a schedule keeps its group.
func TestDryRunKeysAScaleUpOnPodsAndCapacity(t *testing.T) {
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	large := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	pods := func(names ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, n := range names {
			out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: n}})
		}
		return out
	}
	up := func(group string, from, to int, capacity corev1.ResourceList, p []*corev1.Pod) Growth {
		return Growth{Up: scaleup.ScaleUp{Group: group, From: from, To: to, Pods: p}, NodeCapacity: capacity}
	}
	d := newDryRun()
	for _, s := range []struct {
		name string
		g    Growth
		new  bool
	}{
		{"first decision", up("zone-a", 3, 5, small, pods("w-1", "w-2", "w-3")), true},
		{"the tie-break picks zone-b", up("zone-b", 2, 4, small, pods("w-1", "w-2", "w-3")), false},
		{"back to zone-a, pods listed in another order", up("zone-a", 3, 5, small, pods("w-3", "w-1", "w-2")), false},
		{"one node of twice the size is the same capacity", up("big", 0, 1, large, pods("w-2", "w-1", "w-3")), false},
		{"a pod more", up("zone-a", 3, 5, small, pods("w-1", "w-2", "w-3", "w-4")), true},
		{"more capacity for the same pods", up("zone-a", 3, 6, small, pods("w-1", "w-2", "w-3", "w-4")), true},
		{"a schedule's scale-up keeps its group", Growth{Up: scaleup.ScaleUp{Group: "zone-a", From: 3, To: 6}, Why: "schedule"}, true},
		{"the same schedule", Growth{Up: scaleup.ScaleUp{Group: "zone-a", From: 3, To: 6}, Why: "schedule"}, false},
		{"the schedule on another group", Growth{Up: scaleup.ScaleUp{Group: "zone-b", From: 3, To: 6}, Why: "schedule"}, true},
	} {
		d.begin()
		got := d.note(growthKey(s.g))
		d.end(true)
		if got != s.new {
			t.Errorf("%s: new %v, want %v (key %s, standing before: %v)", s.name, got, s.new, growthKey(s.g), d.standingKeys())
		}
	}
}
