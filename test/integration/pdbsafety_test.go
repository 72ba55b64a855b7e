package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// pdbWatcher follows every pod of a namespace and, after each change,
// checks each guarded app's healthy pods (Ready, not being deleted) against
// its PDB's minimum. An app is checked once it first reached its minimum.
type pdbWatcher struct {
	mu         sync.Mutex
	pods       map[string]*corev1.Pod
	min        map[string]int
	armed      map[string]bool
	violations []string
	events     int
}

func newPDBWatcher() *pdbWatcher {
	return &pdbWatcher{pods: map[string]*corev1.Pod{}, min: map[string]int{}, armed: map[string]bool{}}
}

func (w *pdbWatcher) guard(app string, minHealthy int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.min[app], w.armed[app] = minHealthy, false
}

func (w *pdbWatcher) unguard(app string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.min, app)
	delete(w.armed, app)
}

func (w *pdbWatcher) observe(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if ev.Type == watch.Deleted {
		delete(w.pods, p.Name)
	} else {
		w.pods[p.Name] = p
	}
	for app, min := range w.min {
		healthy := 0
		for _, q := range w.pods {
			if q.Labels["app"] == app && q.DeletionTimestamp == nil && podReady(q) {
				healthy++
			}
		}
		switch {
		case healthy >= min:
			w.armed[app] = true
		case w.armed[app]:
			w.violations = append(w.violations, fmt.Sprintf("%s: %d healthy, PDB minimum %d (after %s of %s on %s)",
				app, healthy, min, ev.Type, p.Name, p.Spec.NodeName))
		}
	}
}

func TestScaleDownNeverBreaksAPDB(t *testing.T) {
	deleteNodesOnCleanup(t, "rnd-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: rnd-a, minSize: 1, maxSize: 30, initialSize: 8, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 200ms}\n"
	preloadNodes(t, groups)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := cluster.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watcher := newPDBWatcher()
	go func() {
		for ev := range w.ResultChan() {
			watcher.observe(ev)
		}
	}()
	tl := startTidal(t, append(scaleDownFlags, "--scale-down-unneeded-time=1s", "--local-node-groups="+writeGroups(t, groups))...)

	seed := uint64(20261122)
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	type app struct {
		replicas int32
		min      int32
	}
	apps := map[string]*app{}
	serial := 0
	cpus := []string{"250m", "500m", "750m", "1", "1500m"}
	create := func() {
		serial++
		name := fmt.Sprintf("w%02d", serial)
		a := &app{replicas: 2 + rng.Int32N(5)}
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
		if rng.IntN(2) == 0 {
			a.min = a.replicas - 1 - rng.Int32N(a.replicas-1)
			pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(a.min))
		} else {
			unavailable := 1 + rng.Int32N(a.replicas-1)
			a.min = a.replicas - unavailable
			pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(unavailable))
		}
		apps[name] = a
		watcher.guard(name, int(a.min))
		createPDB(t, pdb)
		createDeployment(t, spread(deployment(ns, name, a.replicas, cpus[rng.IntN(len(cpus))], "512Mi")))
	}
	scale := func(name string, a *app, replicas int32) {
		s, err := cluster.Client.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Replicas = replicas
		if _, err := cluster.Client.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		a.replicas = replicas
	}
	remove := func(name string) {
		watcher.unguard(name)
		delete(apps, name)
		_ = cluster.Client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = cluster.Client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
	for i := 0; i < 4; i++ {
		create()
	}
	for round := 0; round < 50; round++ {
		names := make([]string, 0, len(apps))
		for n := range apps {
			names = append(names, n)
		}
		slices.Sort(names)
		switch r := rng.IntN(10); {
		case r < 3 || len(names) < 2:
			create()
		case r < 6:
			// Shrink, never below the PDB's minimum plus one.
			n := names[rng.IntN(len(names))]
			if a := apps[n]; a.replicas > a.min+1 {
				scale(n, a, a.min+1+rng.Int32N(a.replicas-a.min-1))
			}
		case r < 8:
			n := names[rng.IntN(len(names))]
			if a := apps[n]; a.replicas < 8 {
				scale(n, a, a.replicas+1+rng.Int32N(2))
			}
		default:
			remove(names[rng.IntN(len(names))])
		}
		time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
	}
	time.Sleep(3 * time.Second)

	watcher.mu.Lock()
	violations, events := watcher.violations, watcher.events
	watcher.mu.Unlock()
	evicted, _ := metricValue(tl.Address, `tidal_evicted_pods_total{eviction_result="succeeded"}`)
	removed := 0.0
	for _, kind := range []string{"empty", "underutilized"} {
		v, _ := metricValue(tl.Address, fmt.Sprintf(`tidal_scaled_down_nodes_total{node_group="rnd-a",reason=%q}`, kind))
		removed += v
	}
	t.Logf("%d pod events observed, %v pods evicted, %v nodes removed, %d nodes left", events, evicted, removed, nodeCount(t, "rnd-a"))
	if removed < 3 || evicted < 3 {
		t.Fatalf("only %v nodes removed and %v pods evicted: the rounds did not exercise scale-down", removed, evicted)
	}
	if len(violations) > 0 {
		t.Fatalf("%d PDB violations, first: %v", len(violations), violations[:min(5, len(violations))])
	}
}

// TestPDBWatcherCatchesViolations checks the watcher itself: without it the
// test above could pass by seeing nothing.
func TestPDBWatcherCatchesViolations(t *testing.T) {
	w := newPDBWatcher()
	w.guard("web", 2)
	pod := func(name string, ready bool) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	}
	w.observe(watch.Event{Type: watch.Added, Object: pod("a", true)})
	if len(w.violations) != 0 {
		t.Fatal("an app still coming up counted as a violation")
	}
	w.observe(watch.Event{Type: watch.Added, Object: pod("b", true)})
	w.observe(watch.Event{Type: watch.Added, Object: pod("c", true)})
	w.observe(watch.Event{Type: watch.Deleted, Object: pod("c", true)})
	if len(w.violations) != 0 {
		t.Fatalf("3 → 2 healthy with a minimum of 2 is no violation: %v", w.violations)
	}
	w.observe(watch.Event{Type: watch.Modified, Object: pod("b", false)})
	if len(w.violations) != 1 {
		t.Fatalf("1 healthy with a minimum of 2 must be a violation, got %v", w.violations)
	}
}
