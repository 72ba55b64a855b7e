package testenv

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// NodeDeletions follows Nodes and pods from the test's own client and
// tells, for every Node deletion, which pods were bound to the node at that
// instant: pods that are not DaemonSet pods, bound before the deletion, not
// yet deleted nor finished. Instants are etcd revisions, so the two watches
// are ordered soundly whatever their delivery order.
type NodeDeletions struct {
	cs kubernetes.Interface

	mu        sync.Mutex
	pods      map[types.UID]*podSpan
	deletions []nodeDeletion
	// seen is the latest revision of a pod event.
	seen uint64
	err  error
}

// podSpan is when a pod was bound to a node: from bound to end (0: not
// ended).
type podSpan struct {
	name, node string
	daemonSet  bool
	bound, end uint64
}

type nodeDeletion struct {
	node string
	rev  uint64
}

// WatchNodeDeletions starts following Node deletions (of the nodes
// nodeSelector selects) and every pod, until the test ends.
func WatchNodeDeletions(t *testing.T, cs kubernetes.Interface, nodeSelector string) *NodeDeletions {
	t.Helper()
	w := &NodeDeletions{cs: cs, pods: map[types.UID]*podSpan{}}
	FollowPods(t, cs, metav1.NamespaceAll, w.onPod)
	FollowNodes(t, cs, nodeSelector, w.onNode)
	return w
}

func (w *NodeDeletions) onPod(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	rev, err := revision(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.err = err
		return
	}
	w.seen = max(w.seen, rev)
	s := w.pods[p.UID]
	if s == nil {
		s = &podSpan{name: p.Namespace + "/" + p.Name, daemonSet: scaledown.IsDaemonSetPod(p)}
		w.pods[p.UID] = s
	}
	if s.node == "" && p.Spec.NodeName != "" {
		s.node, s.bound = p.Spec.NodeName, rev
	}
	finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	if s.end == 0 && (ev.Type == watch.Deleted || finished) {
		s.end = rev
	}
}

func (w *NodeDeletions) onNode(ev watch.Event) {
	n, ok := ev.Object.(*corev1.Node)
	if !ok || ev.Type != watch.Deleted {
		return
	}
	rev, err := revision(n)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.err = err
		return
	}
	w.deletions = append(w.deletions, nodeDeletion{node: n.Name, rev: rev})
}

// Check waits until the pod watch has caught up with the node deletions
// seen so far (it touches a pod of namespace ns, the test's, to move the
// watch on), then returns how many nodes were deleted and, for each pod
// bound to a node when it was deleted, a line saying so.
func (w *NodeDeletions) Check(t *testing.T, ns string) (deleted int, lost []string) {
	t.Helper()
	w.mu.Lock()
	var last uint64
	for _, d := range w.deletions {
		last = max(last, d.rev)
	}
	w.mu.Unlock()
	Poll(t, 30*time.Second, "the pod watch to pass the last node deletion", func(ctx context.Context) (bool, error) {
		w.mu.Lock()
		seen := w.seen
		w.mu.Unlock()
		if seen >= last {
			return true, nil
		}
		return false, touchAPod(ctx, w.cs, ns)
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("node deletion watch: %v", w.err)
	}
	for _, d := range w.deletions {
		for _, s := range w.pods {
			if s.node == d.node && !s.daemonSet && s.bound < d.rev && (s.end == 0 || s.end > d.rev) {
				lost = append(lost, fmt.Sprintf("pod %s was on node %s when it was deleted (revision %d)", s.name, d.node, d.rev))
			}
		}
	}
	sort.Strings(lost)
	return len(w.deletions), lost
}

// touchAPod annotates a pod of ns, so the pod watch sees an event.
func touchAPod(ctx context.Context, cs kubernetes.Interface, ns string) error {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(list.Items) == 0 {
		return fmt.Errorf("no pod in %s to move the watch on (%v)", ns, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"tidal.test/watch-marker":"%d"}}}`, time.Now().UnixNano())
	_, err = cs.CoreV1().Pods(ns).Patch(ctx, list.Items[0].Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
