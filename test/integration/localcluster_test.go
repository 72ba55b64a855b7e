package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core"
)

func testNode(name string) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status:     corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}

func isReady(n *corev1.Node) bool { return core.IsNodeReady(n) }

func TestLocalClusterRunsNodesAndPods(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: other tests' namespaces and nodes are no concern
	ctx := context.Background()
	deleteNodesOnCleanup(t, "lc-")
	ns := newNamespace(t)
	cs := cluster(t).Client

	if _, err := cs.CoreV1().Nodes().Create(ctx, testNode("lc-1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	poll(t, 20*time.Second, "node lc-1 Ready without the not-ready taint", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, "lc-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return isReady(n) && len(n.Spec.Taints) == 0, nil
	})
	poll(t, 20*time.Second, "a heartbeat lease for lc-1", func(ctx context.Context) (bool, error) {
		l, err := cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, "lc-1", metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil, err
	})

	// Two replicas guarded by a PDB that allows one disruption.
	labels := map[string]string{"app": "lc"}
	for _, name := range []string{"a", "b"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			}}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
	poll(t, 20*time.Second, "both pods Running and Ready with an IP and start time", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "lc-1" && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.Status.StartTime != nil && podReady(&p) {
				ready++
			}
		}
		return ready == 2, nil
	})
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "lc", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pdb: %v", err)
	}
	poll(t, 20*time.Second, "the disruption controller to allow 1 disruption", func(ctx context.Context) (bool, error) {
		p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "lc", metav1.GetOptions{})
		return err == nil && p.Status.CurrentHealthy == 2 && p.Status.DisruptionsAllowed == 1, err
	})
	evict := func(name string) error {
		return cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	}
	if err := evict("a"); err != nil {
		t.Fatalf("first eviction refused: %v", err)
	}
	poll(t, 20*time.Second, "evicted pod a to be gone", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "a", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	poll(t, 20*time.Second, "the PDB to allow no more disruptions", func(ctx context.Context) (bool, error) {
		p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "lc", metav1.GetOptions{})
		return err == nil && p.Status.DisruptionsAllowed == 0, err
	})
	if err := evict("b"); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("eviction of the last pod under a minAvailable=1 PDB: got %v, want 429 TooManyRequests", err)
	}
}

func TestLocalClusterKubeconfigWorks(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: other tests' namespaces and nodes are no concern
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster(t).KubeconfigPath)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", cluster(t).KubeconfigPath, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("get kube-system through the written kubeconfig: %v", err)
	}
}
