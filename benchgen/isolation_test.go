package benchgen

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// pointerSet records reference identities and reports duplicates.
type pointerSet map[uintptr]string

func (s pointerSet) add(t *testing.T, what string, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	if rv.IsNil() {
		return
	}
	p := rv.Pointer()
	if prev, ok := s[p]; ok {
		t.Fatalf("%s shares its memory with %s", what, prev)
	}
	s[p] = what
}

// TestObjectsShareNoMutableState checks that no two objects share a map,
// a slice backing array or a pointer that a consumer could mutate.
func TestObjectsShareNoMutableState(t *testing.T) {
	c := Generate(S1())
	seen := pointerSet{}
	nodes := append([]*corev1.Node{}, c.Nodes...)
	for _, g := range c.NodeGroups {
		nodes = append(nodes, g.Template)
		seen.add(t, g.ID+" taint", g.Taint)
	}
	for _, n := range nodes {
		seen.add(t, n.Name+" labels", n.Labels)
		seen.add(t, n.Name+" taints", n.Spec.Taints)
		seen.add(t, n.Name+" capacity", n.Status.Capacity)
		seen.add(t, n.Name+" allocatable", n.Status.Allocatable)
		seen.add(t, n.Name+" conditions", n.Status.Conditions)
	}
	for _, list := range [][]*corev1.Pod{c.RunningPods, c.PendingPods} {
		for _, p := range list {
			seen.add(t, p.Name+" labels", p.Labels)
			seen.add(t, p.Name+" owners", p.OwnerReferences)
			seen.add(t, p.Name+" controller", p.OwnerReferences[0].Controller)
			seen.add(t, p.Name+" containers", p.Spec.Containers)
			seen.add(t, p.Name+" requests", p.Spec.Containers[0].Resources.Requests)
			seen.add(t, p.Name+" tolerations", p.Spec.Tolerations)
			seen.add(t, p.Name+" selector", p.Spec.NodeSelector)
			seen.add(t, p.Name+" affinity", p.Spec.Affinity)
			seen.add(t, p.Name+" conditions", p.Status.Conditions)
		}
	}
	for _, rs := range c.ReplicaSets {
		seen.add(t, rs.Name+" labels", rs.Labels)
		seen.add(t, rs.Name+" selector", rs.Spec.Selector.MatchLabels)
		seen.add(t, rs.Name+" template labels", rs.Spec.Template.Labels)
	}
}

// TestAppendDoesNotClobberNeighbours checks that the capacity of the slices
// carved out of shared blocks is capped.
func TestAppendDoesNotClobberNeighbours(t *testing.T) {
	c := Generate(S1())
	a, b := c.RunningPods[0], c.RunningPods[1]
	a.Spec.Containers = append(a.Spec.Containers, corev1.Container{Name: "sidecar"})
	a.OwnerReferences = append(a.OwnerReferences, a.OwnerReferences[0])
	*a.OwnerReferences[0].Controller = false
	a.Labels["app"] = "changed"
	if b.Spec.Containers[0].Name != "c" || b.Labels["app"] == "changed" || !*b.OwnerReferences[0].Controller {
		t.Errorf("changing %s changed %s: %+v", a.Name, b.Name, b)
	}
}
