package estimator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/checkertest"
)

func node(name, cpu, mem string) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res}}
}

var serial int

func pods(n int, app, cpu, mem string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		serial++
		name := fmt.Sprintf("%s-%d", app, serial)
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			}}}},
		})
	}
	return out
}

type fixture struct {
	checker *simulator.Checker
	snap    *simulator.Snapshot
}

func newFixture(t *testing.T) *fixture {
	// These pods have no volumes: the plugins need no listers.
	snap, c := checkertest.New(t, nil)
	return &fixture{checker: c, snap: snap}
}

func (f *fixture) work(t *testing.T, groups ...[]*corev1.Pod) []Work {
	var out []Work
	for _, g := range groups {
		gc, err := f.checker.CheckGroup(context.Background(), &simulator.PodGroup{Pods: g})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Work{Check: gc, Pods: g})
	}
	return out
}

func template(t *testing.T, cpu, mem string, podsOnStart ...*corev1.Pod) *simulator.NodeTemplate {
	tmpl, err := simulator.NewNodeTemplate("g", node("template-node-for-g", cpu, mem), podsOnStart)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestFirstFitDecreasingPacksMixedSizes(t *testing.T) {
	f := newFixture(t)
	// On 4-CPU nodes: three 3-CPU pods need three nodes, and the three
	// 1-CPU pods fill the gaps they leave: 3 nodes, not 4.
	w := f.work(t, pods(3, "small", "1", "1Gi"), pods(3, "big", "3", "1Gi"))
	est, err := Binpack(context.Background(), f.checker, template(t, "4", "16Gi"), w, Limits{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if est.NodeCount != 3 || len(est.Pods) != 6 {
		t.Fatalf("estimate %d nodes for %d pods, want 3 for 6", est.NodeCount, len(est.Pods))
	}
	if f.snap.Len() != 0 {
		t.Fatalf("estimate left %d nodes in the snapshot", f.snap.Len())
	}
}

func TestDaemonSetPodsTakeTheirShare(t *testing.T) {
	f := newFixture(t)
	ds := pods(1, "ds", "1", "1Gi")[0]
	// 3 CPU left per node: 2 pods of 1.5 CPU each.
	est, _ := Binpack(context.Background(), f.checker, template(t, "4", "16Gi", ds), f.work(t, pods(6, "web", "1500m", "1Gi")), Limits{}, false)
	if est.NodeCount != 3 {
		t.Fatalf("with a 1-CPU DaemonSet pod per node: %d nodes, want 3", est.NodeCount)
	}
}

func TestLimitsAndRejections(t *testing.T) {
	f := newFixture(t)
	w := f.work(t, pods(10, "web", "2", "1Gi"), pods(2, "huge", "8", "1Gi"))
	est, _ := Binpack(context.Background(), f.checker, template(t, "4", "16Gi"), w, Limits{MaxNodes: 3}, false)
	if est.NodeCount != 3 || len(est.Pods) != 6 || !est.LimitReached {
		t.Fatalf("max 3 nodes: %d nodes, %d pods, limit %v; want 3, 6, true", est.NodeCount, len(est.Pods), est.LimitReached)
	}
	st := est.Rejected[w[1].Check.Group]
	if st == nil || st.Message() != "Insufficient cpu" {
		t.Fatalf("8-CPU pods on a 4-CPU template: rejection %v", st)
	}
	if short := est.Shortfalls[w[1].Check.Group]; !slices.Equal(short, []string{"Insufficient cpu (needs 8, free 4)"}) {
		t.Fatalf("8-CPU pods on a 4-CPU template: shortfalls %q", short)
	}
}

func TestKeepLeavesNodesForTheNextRound(t *testing.T) {
	f := newFixture(t)
	f.snap.Fork()
	defer f.snap.Revert()
	est, _ := Binpack(context.Background(), f.checker, template(t, "4", "16Gi"), f.work(t, pods(3, "web", "3", "1Gi")), Limits{}, true)
	if est.NodeCount != 3 || f.snap.Len() != 3 {
		t.Fatalf("kept estimate: %d nodes, snapshot %d", est.NodeCount, f.snap.Len())
	}
	// A second estimate names its nodes apart from the kept ones.
	est2, err := Binpack(context.Background(), f.checker, template(t, "4", "16Gi"), f.work(t, pods(1, "more", "3", "1Gi")), Limits{}, false)
	if err != nil || est2.NodeCount != 1 {
		t.Fatalf("second estimate: %v, %v", est2, err)
	}
}

func TestAnEstimateOutOfTimeStillOffersOneNode(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel()
	est, err := Binpack(ctx, f.checker, template(t, "4", "16Gi"), f.work(t, pods(10, "web", "1", "1Gi")), Limits{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if est.NodeCount != 1 || len(est.Pods) != 4 || !est.TimedOut {
		t.Fatalf("past the deadline: %d node(s) for %d pods (timed out %v); want the 4 pods one node takes", est.NodeCount, len(est.Pods), est.TimedOut)
	}
}
