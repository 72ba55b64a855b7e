package scaleup

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PendingOrder is SelectPending carried from one iteration to the next:
// the pods it sorted last keep their order (the same objects, so the same
// keys), and only the pods new since are sorted and merged in. Informers
// hand out the same object for a pod until it changes, so a pending list
// that barely changes costs a lookup per pod rather than a sort. The zero
// PendingOrder sorts everything. Pod objects must not change in place (an
// informer's do not). It is not safe for concurrent use.
type PendingOrder struct {
	// rank is each pod's place in an order the last sort gave, increasing
	// along it (pods gone since may leave gaps), below size.
	rank map[*corev1.Pod]int
	size int
}

// Select is SelectPending(pending, now, s), the same pods in the same
// order.
func (o *PendingOrder) Select(pending []*corev1.Pod, now time.Time, s Selection) Selected {
	out := selectPending(pending, now, s)
	o.sort(out.Pods)
	return out
}

// sort sorts pods as sortPending does, from the last order.
func (o *PendingOrder) sort(pods []*corev1.Pod) {
	// slots holds the known pods at their rank; fresh the others.
	slots := make([]*corev1.Pod, o.size)
	var fresh []*corev1.Pod
	for _, p := range pods {
		r, ok := o.rank[p]
		switch {
		case !ok:
			fresh = append(fresh, p)
		case slots[r] != nil:
			// The same object twice: sorted afresh.
			sortPending(pods)
			o.remember(pods)
			return
		default:
			slots[r] = p
		}
	}
	sortPending(fresh)
	out := pods[:0]
	i := 0
	for _, p := range slots {
		if p == nil {
			continue
		}
		for i < len(fresh) && pendingBefore(fresh[i], p) {
			out = append(out, fresh[i])
			i++
		}
		out = append(out, p)
	}
	out = append(out, fresh[i:]...)
	if len(fresh) > 0 || len(o.rank) > 2*len(pods)+64 {
		// New pods need ranks between the others' (and the ranks of
		// many pods gone are let go).
		o.remember(out)
	}
}

// remember ranks pods, in their order.
func (o *PendingOrder) remember(pods []*corev1.Pod) {
	o.rank, o.size = make(map[*corev1.Pod]int, len(pods)), len(pods)
	for i, p := range pods {
		o.rank[p] = i
	}
}
