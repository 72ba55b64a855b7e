package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/trim"
)

func runningPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// TestDeletionCostFailuresAreCountedAndReturned: one write succeeds, one
// meets a conflict, one a server error; each is counted, the failures are
// returned, the successful cost is on its pod.
func TestDeletionCostFailuresAreCountedAndReturned(t *testing.T) {
	pods := []*corev1.Pod{runningPod("w1", "a"), runningPod("w2", "b"), runningPod("w3", "c"), runningPod("w4", "d")}
	client := fake.NewClientset(pods[0], pods[1], pods[2], pods[3])
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gr := schema.GroupResource{Resource: "pods"}
		switch a.(k8stesting.PatchAction).GetName() {
		case "w2":
			return true, nil, apierrors.NewConflict(gr, "w2", errors.New("the object has been modified"))
		case "w3":
			return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
		}
		return false, nil, nil
	})
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	nodes := []scalein.Node{
		{Name: "a", Utilization: 0.1, Removable: true, Pods: []types.UID{"uid-w1"}},
		{Name: "b", Utilization: 0.2, Removable: true, Pods: []types.UID{"uid-w2"}},
		{Name: "c", Utilization: 0.3, Removable: true, Pods: []types.UID{"uid-w3"}},
		{Name: "d", Utilization: 0.4, Removable: true, Pods: []types.UID{"uid-w4"}},
	}
	obs := NewObserver(prometheus.NewRegistry())
	d := &deletionCosts{pods: ListerPods{Lister: corelisters.NewPodLister(indexer)}, client: client.CoreV1(),
		nodes: func() ([]scalein.Node, time.Time) { return nodes, time.Now() }, observer: obs}
	r := Rescale{Namespace: "shop", Target: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
		From: 4, To: 1, Selector: "app=web"}

	err := d.beforeScaleDown(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "shop/w2 changed since it was read") || !strings.Contains(err.Error(), "pod shop/w3") {
		t.Fatalf("error %v, want the conflict on w2 and the failure on w3", err)
	}
	for result, want := range map[string]float64{"success": 1, "conflict": 1, "error": 1} {
		if got := testutil.ToFloat64(obs.costWrites.WithLabelValues(result)); got != want {
			t.Errorf("tidal_pod_deletion_cost_writes_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	w1, err := client.CoreV1().Pods("shop").Get(context.Background(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w1.Annotations[scalein.CostAnnotation] != "-1000000" || w1.Annotations[scalein.OwnedAnnotation] != "true" {
		t.Errorf("w1 annotations %v, want the first victim's cost and tidal's mark", w1.Annotations)
	}

	// A StatefulSet's scale-in order is fixed: nothing is written.
	before := len(client.Actions())
	r.Target.Kind = "StatefulSet"
	if err := d.beforeScaleDown(context.Background(), r); err != nil || len(client.Actions()) != before {
		t.Errorf("StatefulSet: err %v, %d API call(s), want none", err, len(client.Actions())-before)
	}
	// Without a view of the nodes, nothing is written either.
	r.Target.Kind = "Deployment"
	d.nodes = func() ([]scalein.Node, time.Time) { return nil, time.Time{} }
	if err := d.beforeScaleDown(context.Background(), r); err != nil || len(client.Actions()) != before {
		t.Errorf("no view: err %v, %d API call(s), want none", err, len(client.Actions())-before)
	}
}

// A cost the user set survives the informers' trimming, and tidal leaves
// it alone: the replica on the next emptiest node is chosen instead.
func TestDeletionCostLeavesTheUsersCostThroughTheTrimmedCache(t *testing.T) {
	user, other := runningPod("w1", "a"), runningPod("w2", "b")
	user.Annotations = map[string]string{scalein.CostAnnotation: "1000", "kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z"}
	client := fake.NewClientset(user.DeepCopy(), other.DeepCopy())
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []*corev1.Pod{user, other} {
		trimmed, err := trim.NewSharer().Transform(p.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if err := indexer.Add(trimmed); err != nil {
			t.Fatal(err)
		}
	}
	nodes := []scalein.Node{
		{Name: "a", Utilization: 0.1, Removable: true, Pods: []types.UID{"uid-w1"}},
		{Name: "b", Utilization: 0.2, Removable: true, Pods: []types.UID{"uid-w2"}},
	}
	d := &deletionCosts{pods: ListerPods{Lister: corelisters.NewPodLister(indexer)}, client: client.CoreV1(),
		nodes: func() ([]scalein.Node, time.Time) { return nodes, time.Now() }, observer: NewObserver(prometheus.NewRegistry())}
	r := Rescale{Namespace: "shop", Target: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
		From: 2, To: 1, Selector: "app=web"}
	if err := d.beforeScaleDown(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	var patched []string
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patched = append(patched, p.GetName())
		}
	}
	if len(patched) != 1 || patched[0] != "w2" {
		t.Errorf("patched %v, want only w2 (w1's cost is the user's)", patched)
	}
}

// A controller given the node loop's scale-in view writes the costs on a
// scale-down: the replicas on the removable nodes, emptiest first, are
// marked to go, through the pod client it was given.
func TestScaleInViewWritesCostsOnScaleDown(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 12)
	client := fake.NewClientset()
	for _, o := range h.pods.List() {
		p := o.(*corev1.Pod).DeepCopy()
		p.UID, p.ResourceVersion, p.Spec.NodeName = types.UID("uid-"+p.Name), "3", "node-"+p.Name
		if err := h.pods.Update(p); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	view := []scalein.Node{
		{Name: "node-web-7", Utilization: 0.3, Removable: true, Pods: []types.UID{"uid-web-7"}},
		{Name: "node-web-4", Utilization: 0.1, Removable: true, Pods: []types.UID{"uid-web-4"}},
	}
	obs := NewObserver(prometheus.NewRegistry())
	c, err := New(Config{Store: h.c.cfg.Store, Pods: h.c.cfg.Pods, Scales: h.scales, Metrics: h.c.cfg.Metrics, Recorder: h.recorder,
		Clock: h.clock, HPA: hpa.DefaultConfig(), Observer: obs, PodClient: client.CoreV1(),
		ScaleIn: func() ([]scalein.Node, time.Time) { return view, time.Now() }})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	h.addPA(cpuPA("ns", "web", 50, 2, 10))
	h.sync("ns/web") // above max: scaled down to 10 at once
	if got := h.scales.replicas("ns", "web"); got != 10 {
		t.Fatalf("replicas %d, want 10", got)
	}
	for pod, want := range map[string]string{"web-4": "-1000000", "web-7": "-999999", "web-0": ""} {
		p, err := client.CoreV1().Pods("ns").Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Annotations[scalein.CostAnnotation]; got != want {
			t.Errorf("%s: deletion cost %q, want %q", pod, got, want)
		}
	}
	if got := testutil.ToFloat64(obs.costWrites.WithLabelValues("success")); got != 2 {
		t.Errorf("tidal_pod_deletion_cost_writes_total{result=\"success\"} = %v, want 2", got)
	}

	if _, err := New(Config{Store: h.c.cfg.Store, Pods: h.c.cfg.Pods, Scales: h.scales, Metrics: h.c.cfg.Metrics, Recorder: h.recorder,
		ScaleIn: func() ([]scalein.Node, time.Time) { return view, time.Now() }}); err == nil {
		t.Error("New took a scale-in view without a pod client")
	}
}
