package simulator

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The spread plugin's incremental update tracks only the two emptiest
// zones. With three zones, after pods land in two of them the third is the
// minimum: a third pod in an occupied zone would skew the spread by 2.
// Place and CatchUp must keep the check exact, whichever two zones come
// first and whatever order the nodes are in.
func TestPlacingKeepsZoneSpreadExactOverThreeZones(t *testing.T) {
	zones := []string{"zone-a", "zone-b", "zone-c"}
	for _, first := range zones {
		for _, second := range zones {
			if first == second {
				continue
			}
			for _, viaCatchUp := range []bool{false, true} {
				name := fmt.Sprintf("%s then %s, catch-up %v", first, second, viaCatchUp)
				t.Run(name, func(t *testing.T) { checkSpreadAfter(t, zones, first, second, viaCatchUp) })
			}
		}
	}
}

func checkSpreadAfter(t *testing.T, zones []string, first, second string, viaCatchUp bool) {
	s := NewSnapshot()
	for _, z := range zones {
		if _, err := s.AddNode(testNode("node-"+z, "16", z)); err != nil {
			t.Fatal(err)
		}
	}
	c := newTestChecker(t, s)
	ctx := context.Background()
	var pods []*corev1.Pod
	for i := 0; i < 3; i++ {
		p := testPod("web", "1")
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
		pods = append(pods, p)
	}
	gc, err := c.CheckGroup(ctx, &PodGroup{Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	var placed []Placed
	for i, z := range []string{first, second} {
		pl, err := c.Place(ctx, gc.PodCheck, pods[i], "node-"+z)
		if err != nil {
			t.Fatal(err)
		}
		placed = append(placed, pl)
	}
	check := gc
	if viaCatchUp {
		// A check made before the two pods, caught up with them.
		for _, pl := range placed {
			if err := s.RemovePod(pl.Info.GetPod(), pl.Node); err != nil {
				t.Fatal(err)
			}
		}
		stale, err := c.CheckGroup(ctx, &PodGroup{Pods: pods[2:]})
		if err != nil {
			t.Fatal(err)
		}
		for _, pl := range placed {
			if err := s.AddPod(pl.Info, pl.Node); err != nil {
				t.Fatal(err)
			}
		}
		if check, err = c.CatchUp(ctx, stale, placed); err != nil {
			t.Fatal(err)
		}
	}
	for _, z := range zones {
		st := c.Fits(ctx, check, s.NodeInfo("node-"+z))
		wantFit := z != first && z != second
		if st.IsSuccess() != wantFit {
			t.Errorf("third pod on %s: fits %v (%v), want %v: pods are on %s and %s", z, st.IsSuccess(), st.Message(), wantFit, first, second)
		}
	}
}
