package core

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// liveSnapshot keeps a simulator.Snapshot in step with the cluster from
// informer events. Handlers only record what changed; Sync, called by the
// loop at the start of an iteration, applies the changes incrementally, so
// an iteration never waits for a rebuild of the whole cluster.
type liveSnapshot struct {
	mu    sync.Mutex
	pods  map[types.UID]*corev1.Pod // nil: deleted
	nodes map[string]*corev1.Node   // nil: deleted

	// Owned by the loop.
	snap    *simulator.Snapshot
	placed  map[types.UID]placedPod
	orphans map[string]map[types.UID]*corev1.Pod
}

type placedPod struct {
	node string
	pod  *corev1.Pod
}

func newLiveSnapshot() *liveSnapshot {
	return &liveSnapshot{
		pods: map[types.UID]*corev1.Pod{}, nodes: map[string]*corev1.Node{},
		snap: simulator.NewSnapshot(), placed: map[types.UID]placedPod{}, orphans: map[string]map[types.UID]*corev1.Pod{},
	}
}

// podHandler and nodeHandler feed informer events in.
func (l *liveSnapshot) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.recordPod(obj, false) },
		UpdateFunc: func(_, obj any) { l.recordPod(obj, false) },
		DeleteFunc: func(obj any) { l.recordPod(obj, true) },
	}
}

func (l *liveSnapshot) nodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.recordNode(obj, false) },
		UpdateFunc: func(_, obj any) { l.recordNode(obj, false) },
		DeleteFunc: func(obj any) { l.recordNode(obj, true) },
	}
}

func (l *liveSnapshot) recordPod(obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if deleted {
		l.pods[pod.UID] = nil
	} else {
		l.pods[pod.UID] = pod
	}
}

func (l *liveSnapshot) recordNode(obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if deleted {
		l.nodes[node.Name] = nil
	} else {
		l.nodes[node.Name] = node
	}
}

// Sync applies the recorded changes to the snapshot and returns it. It
// must not be called while the snapshot is forked.
func (l *liveSnapshot) Sync() (*simulator.Snapshot, error) {
	if l.snap.Forked() {
		return nil, fmt.Errorf("snapshot sync while a simulation is open")
	}
	l.mu.Lock()
	pods, nodes := l.pods, l.nodes
	l.pods, l.nodes = map[types.UID]*corev1.Pod{}, map[string]*corev1.Node{}
	l.mu.Unlock()
	for name, n := range nodes {
		l.applyNode(name, n)
	}
	for uid, p := range pods {
		if err := l.applyPod(uid, p); err != nil {
			return nil, err
		}
	}
	return l.snap, nil
}

// holds reports whether the snapshot, as last synced, counts the pod on a
// node (bound, or nominated to it).
func (l *liveSnapshot) holds(uid types.UID) bool {
	_, ok := l.placed[uid]
	return ok
}

func (l *liveSnapshot) applyNode(name string, n *corev1.Node) {
	existing := l.snap.NodeInfo(name)
	switch {
	case n == nil && existing != nil:
		for _, pi := range existing.Pods {
			p := pi.GetPod()
			delete(l.placed, p.UID)
			l.orphan(name, p)
		}
		_ = l.snap.RemoveNode(name)
	case n != nil && existing != nil:
		old := existing.Node()
		existing.SetNode(n)
		if schedulingChanged(old, n) {
			l.snap.Touch()
		}
	case n != nil:
		_, _ = l.snap.AddNode(n)
		waiting := l.orphans[name]
		delete(l.orphans, name)
		for uid, p := range waiting {
			l.place(uid, p, name)
		}
	}
}

// applyPod moves a pod to where it now is: on its node, on the node it is
// nominated to (as Cluster Autoscaler counts it: the scheduler is about to
// bind it there, so no other node is asked for it), or nowhere when it is
// pending, finished or gone.
func (l *liveSnapshot) applyPod(uid types.UID, p *corev1.Pod) error {
	old, had := l.placed[uid]
	node := podNode(p)
	want := node != ""
	if had && want && old.node == node && old.pod.Spec.NodeName == p.Spec.NodeName && !simulationChanged(old.pod, p) {
		return nil
	}
	if had {
		if err := l.snap.RemovePod(old.pod, old.node); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		delete(l.placed, uid)
	}
	for node, m := range l.orphans {
		if _, ok := m[uid]; ok {
			delete(m, uid)
			if len(m) == 0 {
				delete(l.orphans, node)
			}
		}
	}
	if !want {
		return nil
	}
	if l.snap.NodeInfo(node) == nil {
		l.orphan(node, p)
		return nil
	}
	l.place(uid, p, node)
	return nil
}

// podNode is the node the snapshot counts p on: the one it is bound to, or
// for a pod still pending the one it is nominated to; "" for none.
func podNode(p *corev1.Pod) string {
	switch {
	case p == nil || isTerminal(p):
		return ""
	case p.Spec.NodeName != "":
		return p.Spec.NodeName
	case p.DeletionTimestamp == nil:
		return p.Status.NominatedNodeName
	}
	return ""
}

// place puts p on node in the snapshot. A pod the snapshot refuses stays
// an orphan of node rather than vanishing: a node must never look emptier
// than it is. (NewPodInfo's error is a selector the API server would not
// have admitted; the pod is placed with what parsed.)
func (l *liveSnapshot) place(uid types.UID, p *corev1.Pod, node string) {
	pi, _ := framework.NewPodInfo(p)
	if err := l.snap.AddPod(pi, node); err != nil {
		l.orphan(node, p)
		return
	}
	l.placed[uid] = placedPod{node: node, pod: p}
}

func (l *liveSnapshot) orphan(node string, p *corev1.Pod) {
	m := l.orphans[node]
	if m == nil {
		m = map[types.UID]*corev1.Pod{}
		l.orphans[node] = m
	}
	m[p.UID] = p
}
