package scaledown

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
)

// TestBoundPodCheckIsTheMovedPodCheck: the check of a bound pod as moved
// off its node (simulator.Checker.CheckBoundPod, which the plan uses
// instead of copying each pod) gives, on every node, the Filter answer of
// the check of a copy with no node name (MovedPod), and the same
// PreFilter outcome. Pods are a benchgen cluster's running pods as stored,
// and variants of some with host ports, required pod anti-affinity, a hard
// topology spread and a node selector.
func TestBoundPodCheckIsTheMovedPodCheck(t *testing.T) {
	ctx := context.Background()
	p := benchgen.S1()
	p.Seed, p.N, p.M, p.P, p.G, p.K = 7, 30, 12, 20, 4, 3
	c := benchload.Cluster(t, p)
	snap := benchload.Snapshot(t, c, rand.New(rand.NewPCG(7, 29)))
	checker := benchload.Checker(t, snap)
	nodes, err := snap.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	var infos []*framework.PodInfo
	for _, ni := range nodes {
		for _, pi := range ni.GetPods() {
			if info, ok := pi.(*framework.PodInfo); ok {
				infos = append(infos, info)
			}
		}
	}
	for i, info := range slices.Clone(infos[:min(len(infos), 8)]) {
		pod := info.Pod.DeepCopy()
		pod.UID += "-variant"
		switch i % 4 {
		case 0:
			pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 8080, HostPort: 8080})
		case 1:
			pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: pod.Labels}, TopologyKey: corev1.LabelHostname}}}}
		case 2:
			pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: pod.Labels}}}
		case 3:
			pod.Spec.NodeSelector = map[string]string{corev1.LabelHostname: nodes[0].Node().Name}
		}
		v, err := framework.NewPodInfo(pod)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, v)
	}
	passed, failed, stateful := 0, 0, 0
	for _, info := range infos {
		if info.Pod.Spec.NodeName == "" {
			t.Fatalf("pod %s has no node", info.Pod.Name)
		}
		bound, moved := checker.CheckBoundPod(ctx, info), checker.CheckPod(ctx, MovedPod(info))
		if (bound.Status == nil) != (moved.Status == nil) || bound.Stateful() != moved.Stateful() {
			t.Fatalf("pod %s: PreFilter status %v stateful %v, of the moved copy %v, %v", info.Pod.Name,
				bound.Status, bound.Stateful(), moved.Status, moved.Stateful())
		}
		if bound.Stateful() {
			stateful++
		}
		for _, ni := range nodes {
			a, b := checker.Filter(ctx, bound.PodCheck, ni), checker.Filter(ctx, moved.PodCheck, ni)
			if a.Code() != b.Code() || !slices.Equal(reasons(a), reasons(b)) {
				t.Fatalf("pod %s (on %s) on node %s: %v, the moved copy %v", info.Pod.Name, info.Pod.Spec.NodeName, ni.Node().Name, a, b)
			}
			if a.Code() == fwk.Success {
				passed++
			} else {
				failed++
			}
		}
	}
	// The comparison means something only if both answers occur.
	if passed == 0 || failed == 0 || stateful == 0 {
		t.Fatalf("%d passed, %d failed, %d stateful checks: the cluster does not exercise the comparison", passed, failed, stateful)
	}
}

func reasons(s *fwk.Status) []string {
	if s == nil {
		return nil
	}
	return s.Reasons()
}
