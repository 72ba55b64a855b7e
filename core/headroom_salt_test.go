package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/checkertest"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// The scale-down planner keys its memory on where the headroom went: the
// same headroom, listed in any order, gives the same key; other headroom,
// or the same placed elsewhere, another.
func TestHeadroomPlacementKeyNamesWhatWasPlaced(t *testing.T) {
	ctx := context.Background()
	snap, checker := checkertest.New(t, nil)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := snap.AddNode(statusNode(n)); err != nil {
			t.Fatal(err)
		}
	}
	keys := simulator.NewEquivalenceKeys()
	headroom := func(cpu string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, app := range []string{"web", "api"} {
			for i := 0; i < 3; i++ {
				name := fmt.Sprintf("%s-headroom-%d", app, i)
				out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
					Labels: map[string]string{"app": app}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}})
			}
		}
		return out
	}
	salt := func(pods []*corev1.Pod) string {
		t.Helper()
		snap.Fork()
		defer snap.Revert()
		s, err := placeHeadroom(ctx, checker, keys, pods)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	pods := headroom("1")
	first := salt(pods)
	r := rand.New(rand.NewPCG(2, 3))
	for i := 0; i < 5; i++ {
		simtest.Shuffle(r, pods)
		if got := salt(pods); got != first {
			t.Fatalf("the headroom listed in another order: key %q, was %q", got, first)
		}
	}
	if got := salt(headroom("2")); got == first {
		t.Fatal("bigger headroom pods (same names, count and nodes' room) gave the same key")
	}
	if err := snap.RemoveNode("a"); err != nil {
		t.Fatal(err)
	}
	if got := salt(headroom("1")); got == first {
		t.Fatal("headroom placed on other nodes gave the same key")
	}
}
