package scaledown

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// pendingPod is a pod of ReplicaSet app that no node runs yet, as the API
// server stores it (admission's default tolerations included).
func (c *cluster) pendingPod(name, app, cpu string) *corev1.Pod {
	c.owners[app] = true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), ResourceVersion: "7",
			Labels:          map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: app, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}
}

func arrivingOn(t *testing.T, p *corev1.Pod, node string) simulator.Placed {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return simulator.Placed{Info: pi, Node: node}
}

// A pending pod the scheduler is about to bind to a fresh node keeps that
// node from being taken for empty; the node goes only when the pod fits
// elsewhere too, and then as an empty node, with nothing to evict.
func TestArrivingPodsKeepTheirNode(t *testing.T) {
	for _, tc := range []struct {
		name string
		// room is the CPU of a second node, "other", which stays.
		room string
		// arrivals are pod name → node; a node named "gone" is not in the
		// snapshot.
		arrivals map[string]string
		deleting []string
		// want is "unneeded:<kind>" or the reason fresh stays.
		want string
	}{
		{name: "no arrivals: the fresh node is empty", room: "4", want: "unneeded:empty"},
		{name: "arriving pod fits nowhere else", room: "500m", arrivals: map[string]string{"p1": "fresh"}, want: "NoPlaceToMovePods"},
		{name: "two arriving pods, room for one elsewhere", room: "1", arrivals: map[string]string{"p1": "fresh", "p2": "fresh"},
			want: "NoPlaceToMovePods"},
		{name: "arriving pod fits elsewhere: empty, nothing evicted", room: "4", arrivals: map[string]string{"p1": "fresh"},
			want: "unneeded:empty"},
		{name: "arriving pod's node is gone", room: "1", arrivals: map[string]string{"p1": "gone"}, want: "unneeded:empty"},
		{name: "arriving pod's node is being deleted", room: "1", arrivals: map[string]string{"p1": "x"}, deleting: []string{"x"},
			want: "unneeded:empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.node("fresh", "4")
			c.node("other", tc.room)
			c.node("x", "500m")
			var arriving []simulator.Placed
			for name, node := range tc.arrivals {
				arriving = append(arriving, arrivingOn(t, c.pendingPod(name, "web", "900m"), node))
			}
			plan := c.plan([]string{"fresh"}, func(in *Input) {
				in.Arriving, in.Deleting = arriving, tc.deleting
				in.Owners.Existing[OwnerKey{Kind: "ReplicaSet", Namespace: "default", Name: "web"}] = true
			})
			got := reasonOf(plan, "fresh")
			if len(plan.Unneeded) == 1 {
				d := Removals(RemovalInput{Plan: plan, Tracking: Tracking{"fresh": now.Add(-time.Hour)},
					Groups: map[string]Times{"g": {Unneeded: time.Minute}}, Parallelism: 1, DrainParallelism: 1,
					Capacity: map[string]Resources{"fresh": {4000, 16 << 30}}, Cluster: Resources{MilliCores: 100_000, Memory: 100 << 30},
					Now: now})
				if len(d.Start) != 1 || len(d.Start[0].Evict) != 0 {
					t.Fatalf("removals %+v: want fresh removed with nothing to evict", d.Start)
				}
				got = "unneeded:" + string(d.Start[0].Kind)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("fresh: %q, want %q (plan %s)", got, tc.want, describe(plan))
			}
		})
	}
}

// The planner's memory keys on the arriving pods: the same cluster with a
// pod now arriving on the fresh node is planned again.
func TestPlannerPlansAgainWhenPodsArrive(t *testing.T) {
	c := newCluster(t)
	c.node("fresh", "4")
	c.node("other", "500m")
	in := c.input([]string{"fresh"})
	in.Owners.Existing[OwnerKey{Kind: "ReplicaSet", Namespace: "default", Name: "web"}] = true
	var p Planner
	first, _, err := p.Plan(context.Background(), in)
	if err != nil || len(first.Unneeded) != 1 {
		t.Fatalf("first plan %s, err %v: want fresh unneeded", describe(first), err)
	}
	in.Arriving = []simulator.Placed{arrivingOn(t, c.pendingPod("p1", "web", "900m"), "fresh")}
	second, reused, err := p.Plan(context.Background(), in)
	if err != nil || reused || len(second.Unneeded) != 0 {
		t.Fatalf("plan with a pod arriving: reused %v, %s, err %v; want fresh kept", reused, describe(second), err)
	}
	if _, reused, _ := p.Plan(context.Background(), in); !reused {
		t.Fatal("the same input with the same arriving pod was planned again")
	}
}
