package localapp

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
)

// demoRecorder watches one pass of the demo: when each pod of the demo
// namespace appeared and got a node, and when each node came and went.
// Watching (not polling) gives times to the millisecond.
type demoRecorder struct {
	mu    sync.Mutex
	now   func() time.Time
	pods  map[types.UID]*podTimes
	nodes map[string]*nodeTimes
}

type podTimes struct{ seen, bound time.Time }

type nodeTimes struct {
	pool          string
	since, until  time.Time
	existedBefore bool
}

// startDemoRecorder watches pods in ns and every node until ctx ends.
func startDemoRecorder(ctx context.Context, client kubernetes.Interface, ns string) (*demoRecorder, error) {
	r := &demoRecorder{now: time.Now, pods: map[types.UID]*podTimes{}, nodes: map[string]*nodeTimes{}}
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	nodeFactory := informers.NewSharedInformerFactory(client, 0)
	if _, err := podFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.pod,
		UpdateFunc: func(_, obj any) { r.pod(obj) },
	}); err != nil {
		return nil, fmt.Errorf("demo: watch pods: %w", err)
	}
	if _, err := nodeFactory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    r.nodeAdded,
		DeleteFunc: r.nodeDeleted,
	}); err != nil {
		return nil, fmt.Errorf("demo: watch nodes: %w", err)
	}
	podFactory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	for _, f := range []informers.SharedInformerFactory{podFactory, nodeFactory} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return nil, fmt.Errorf("demo: informer for %v did not sync", typ)
			}
		}
	}
	return r, nil
}

func (r *demoRecorder) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.pods[p.UID]
	if t == nil {
		t = &podTimes{seen: r.now()}
		r.pods[p.UID] = t
	}
	if p.Spec.NodeName != "" && t.bound.IsZero() {
		t.bound = r.now()
	}
}

func (r *demoRecorder) nodeAdded(obj any, initialList bool) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes[n.Name] = &nodeTimes{pool: poolOf(n), since: r.now(), existedBefore: initialList}
}

func (r *demoRecorder) nodeDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.nodes[n.Name]; t != nil && t.until.IsZero() {
		t.until = r.now()
	}
}

func poolOf(n *corev1.Node) string {
	if pool := n.Labels[local.NodeGroupLabel]; pool != "" {
		return pool
	}
	return "(other)"
}

// podWaits returns, over the pods that appeared after from, the longest
// time one waited for a node and the sum of their waits. Pods still
// waiting count up to now.
func (r *demoRecorder) podWaits(from time.Time) (longest, total time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for _, t := range r.pods {
		if t.seen.Before(from) {
			continue
		}
		end := t.bound
		if end.IsZero() {
			end = now
		}
		w := end.Sub(t.seen)
		total += w
		longest = max(longest, w)
	}
	return longest, total
}

// nodesNow counts the nodes of each pool that have not gone.
func (r *demoRecorder) nodesNow() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, t := range r.nodes {
		if t.until.IsZero() {
			out[t.pool]++
		}
	}
	return out
}

// costPerHour is what the nodes cost per hour at the pools' prices; false
// when a pool with nodes has no price (the cost is not known).
func costPerHour(nodes map[string]int, prices map[string]float64) (float64, bool) {
	total := 0.0
	for pool, n := range nodes {
		p, ok := prices[pool]
		if !ok && n > 0 {
			return 0, false
		}
		total += float64(n) * p
	}
	return total, true
}

// nodeHours returns the node-hours each pool used between from and to.
func (r *demoRecorder) nodeHours(from, to time.Time) map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]float64{}
	for _, t := range r.nodes {
		start, end := t.since, t.until
		if t.existedBefore || start.Before(from) {
			start = from
		}
		if end.IsZero() || end.After(to) {
			end = to
		}
		if end.After(start) {
			out[t.pool] += end.Sub(start).Hours()
		}
	}
	return out
}
