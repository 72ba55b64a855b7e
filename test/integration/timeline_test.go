package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// drainTimeline follows the cluster's nodes, in the order the API server
// stored their changes, and records when each node first was Ready and
// when each first carried the deletion taint (its drain began).
type drainTimeline struct {
	mu sync.Mutex
	// steps are "ready GROUP NODE" and "drain GROUP NODE", in order.
	steps []string
	seen  map[string]bool
}

func watchDrains(t *testing.T) *drainTimeline {
	t.Helper()
	d := &drainTimeline{seen: map[string]bool{}}
	testenv.FollowNodes(t, cluster(t).Client, "", d.onNode)
	return d
}

func (d *drainTimeline) onNode(ev watch.Event) {
	n, ok := ev.Object.(*corev1.Node)
	if !ok || ev.Type == watch.Deleted {
		return
	}
	group := n.Labels[local.NodeGroupLabel]
	d.mu.Lock()
	defer d.mu.Unlock()
	note := func(what string) {
		if step := what + " " + group + " " + n.Name; !d.seen[step] {
			d.seen[step] = true
			d.steps = append(d.steps, step)
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			note("ready")
		}
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == scaledown.ToBeDeletedTaint {
			note("drain")
		}
	}
}

// drainsBeforeReady are the drains of oldGroup's nodes that began before
// as many nodes of newGroup, not Ready when the timeline began, were Ready:
// the k-th drain needs k new nodes Ready before it.
func (d *drainTimeline) drainsBeforeReady(oldGroup, newGroup string, initial int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var bad []string
	ready, drains := -initial, 0
	for _, s := range d.steps {
		switch {
		case strings.HasPrefix(s, "ready "+newGroup+" "):
			ready++
		case strings.HasPrefix(s, "drain "+oldGroup+" "):
			drains++
			if drains > ready {
				bad = append(bad, fmt.Sprintf("%s with %d new node(s) Ready", s, max(ready, 0)))
			}
		}
	}
	return bad
}

func (d *drainTimeline) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.steps, "; ")
}

// pendingPeak follows a namespace's pods and records the most that were
// waiting for a node at once: created, not bound, not deleted; and the pods
// deleted that were not there when it began (moved pods removed again).
type pendingPeak struct {
	mu      sync.Mutex
	waiting map[types.UID]bool
	peak    int
	// originals are the pods there when the watch began; again the pods
	// created since that were deleted.
	originals, again map[types.UID]bool
}

func watchPending(t *testing.T, ns string) *pendingPeak {
	t.Helper()
	p := &pendingPeak{waiting: map[types.UID]bool{}, originals: map[types.UID]bool{}, again: map[types.UID]bool{}}
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list the pods of %s: %v", ns, err)
	}
	for _, pod := range pods.Items {
		p.originals[pod.UID] = true
	}
	testenv.FollowPods(t, cluster(t).Client, ns, p.onPod)
	return p
}

func (p *pendingPeak) onPod(ev watch.Event) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if gone := ev.Type == watch.Deleted || pod.DeletionTimestamp != nil; gone && !p.originals[pod.UID] {
		p.again[pod.UID] = true
	}
	if ev.Type == watch.Deleted || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		delete(p.waiting, pod.UID)
		return
	}
	p.waiting[pod.UID] = true
	p.peak = max(p.peak, len(p.waiting))
}

// DeletedAgain counts the pods created since the watch began that were
// deleted: with the replica counts fixed, a pod evicted once more after its
// replica had moved.
func (p *pendingPeak) DeletedAgain() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.again)
}

// Peak is the most pods pending at once so far.
func (p *pendingPeak) Peak() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
