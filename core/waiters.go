package core

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// waiters follows the pending pods the node loop counts on new nodes: those
// a scale-up was made for and those waiting for nodes already requested,
// with the group of those nodes. It tells the loop whom a failed launch
// leaves waiting, and when to decide again without waiting for the next
// scan: when a node becomes ready while such pods wait (they may fit it
// now, or the loop sees they do not), and when the scheduler reports such
// a pod unschedulable again after a node became ready (it placed pods
// otherwise than the plan, and this one found no room). The informers'
// handlers call it, so it is safe for concurrent use.
type waiters struct {
	mu   sync.Mutex
	pods map[types.UID]waiter
	// readyNodes counts the nodes that became ready.
	readyNodes uint64
}

// waiter is a pod waiting for new nodes of group since readyNodes
// was since.
type waiter struct {
	group string
	since uint64
}

func newWaiters() *waiters { return &waiters{pods: map[types.UID]waiter{}} }

// update takes an iteration's pending pods and its plan. A pod the plan
// helps with new nodes waits for them; a pod that waited and is still
// pending keeps waiting (the nodes came, and the scheduler has yet to place
// it), unless the plan found no group that can help it and the nodes it
// waits for are no longer coming (coming, nil: none is); a pod no longer
// pending waits no more.
func (a *waiters) update(pending []*corev1.Pod, plan *scaleup.Plan, coming func(group string) bool) {
	var helped map[types.UID]string
	refused := map[types.UID]bool{}
	if plan != nil {
		helped = plan.Helped()
		for _, n := range plan.NoScaleUp {
			for _, p := range n.Pods {
				refused[p.UID] = true
			}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	next := make(map[types.UID]waiter, len(helped))
	for _, p := range pending {
		old, waited := a.pods[p.UID]
		group, ok := helped[p.UID]
		switch {
		case ok && waited:
			next[p.UID] = waiter{group: group, since: old.since}
		case ok:
			next[p.UID] = waiter{group: group, since: a.readyNodes}
		case waited && (!refused[p.UID] || coming != nil && coming(old.group)):
			next[p.UID] = old
		}
	}
	a.pods = next
}

// groups maps the waiting pods to the group whose nodes each waits for.
func (a *waiters) groups() map[types.UID]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[types.UID]string, len(a.pods))
	for uid, w := range a.pods {
		out[uid] = w.group
	}
	return out
}

// waitingFor returns those of pods that wait for nodes of group.
func (a *waiters) waitingFor(group string, pods []*corev1.Pod) []*corev1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range pods {
		if w, ok := a.pods[p.UID]; ok && w.group == group {
			out = append(out, p)
		}
	}
	return out
}

// nodeReady notes that a node became ready, and reports whether pods wait
// for new nodes.
func (a *waiters) nodeReady() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.readyNodes++
	return len(a.pods) > 0
}

// any reports whether pods wait for new nodes.
func (a *waiters) any() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pods) > 0
}

// unschedulableAgain notes that the scheduler found no node for pod once
// more, and reports whether the loop should decide again: the pod waited
// for new nodes and a node became ready since it began waiting or was last
// reported. Each ready node makes a pod count once.
func (a *waiters) unschedulableAgain(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.pods[uid]
	if !ok || w.since == a.readyNodes {
		return false
	}
	w.since = a.readyNodes
	a.pods[uid] = w
	return true
}

// groupOf is the group whose new nodes pod uid waits for ("" if none).
func (a *waiters) groupOf(uid types.UID) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pods[uid].group
}

// stillComing reports whether pod waits for nodes of a group that are still
// coming (coming says which groups have requested nodes not yet ready): the
// pod was counted on them, and a decision that now finds no room for it
// elsewhere must not tell it that no node will come.
func (a *waiters) stillComing(uid types.UID, coming func(group string) bool) bool {
	g := a.groupOf(uid)
	return g != "" && coming(g)
}
