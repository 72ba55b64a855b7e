package act

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/interrupt"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// replacedMemory is how long a node whose replacement finished counts as
// being removed: its Node object goes when the cloud node controller sees
// the instance gone, within a minute or two; one still there after this
// is replaced again.
const replacedMemory = 10 * time.Minute

// Replacement is a node the cloud takes away on its own: marked at once,
// then drained within its deadline and deleted.
type Replacement struct {
	// Removal is the node, its group and pods; its Kind is unused.
	Removal
	// Mark is what is coming and when; Write is true when the node does
	// not carry it yet (or it changed).
	Mark  interrupt.Mark
	Write bool
	// due is the deadline of the replacement under way, brought forward
	// by a sooner mark.
	due *due
}

// Replace marks each node the cloud takes away (the interruption
// annotation, the ToBeDeleted taint and a cordon, in one update), at
// once, then drains and deletes it in the background; life is how long
// those may run. A node already being removed is only marked; one being
// replaced whose mark comes with a sooner deadline has its drain end by
// that one. It returns the nodes it could not mark: their messages wait.
func (a *Live) Replace(ctx, life context.Context, rs []Replacement) map[string]error {
	failed := map[string]error{}
	for _, r := range rs {
		a.mu.Lock()
		_, removing := a.inProgress[r.Name]
		running, replacing := a.replacing[r.Name]
		a.mu.Unlock()
		if replacing && !r.Write {
			continue
		}
		if err := markInterrupted(ctx, a.Client, r.Name, r.Mark, a.Clock.Now()); err != nil {
			klog.FromContext(ctx).Error(err, "Could not mark a node the cloud takes away; trying again", "node", r.Name, "kind", r.Mark.Kind)
			failed[r.Name] = err
			continue
		}
		if r.Write {
			a.marked(ctx, r)
		}
		if replacing && running.due.bringForward(r.Mark.Deadline) {
			klog.FromContext(ctx).Info("Sooner deadline for a node being drained; the drain ends by it", "node", r.Name,
				"kind", r.Mark.Kind, "deadline", r.Mark.Deadline)
		}
		if removing || replacing {
			continue
		}
		r.due = newDue(r.Mark.Deadline)
		a.mu.Lock()
		a.replacing[r.Name] = r
		a.mu.Unlock()
		a.wg.Go(func() { a.replace(life, r) })
	}
	return failed
}

// marked tells that a node was marked: log, event, metric.
func (a *Live) marked(ctx context.Context, r Replacement) {
	m := r.Mark
	due := "no deadline"
	if !m.Deadline.IsZero() {
		due = "due " + m.Deadline.UTC().Format(time.RFC3339)
	}
	klog.FromContext(ctx).Info("Node taken away by the cloud: tainted and cordoned; draining, then deleting", "node", r.Name,
		"nodeGroup", r.Group.Id(), "kind", m.Kind, "detail", m.Detail, "deadline", m.Deadline, "pods", len(r.Pods))
	a.Events.OnNode(r.Node, corev1.EventTypeWarning, "NodeInterrupted", "%s %s (%s): cordoned, draining %d pod(s), then deleting",
		m.Kind, m.Detail, due, len(r.Pods))
	if !m.Sent.IsZero() {
		a.Metrics.InterruptionMarked(a.Clock.Since(m.Sent))
	}
}

// replace drains (PDBs honoured until the deadline allows no more) and
// deletes. After the deadline the node goes whatever its pods do: the
// cloud takes it then anyway. Without a deadline a drain a PDB holds up
// fails, and the node, still marked, is tried again.
func (a *Live) replace(ctx context.Context, r Replacement) {
	logger := klog.FromContext(ctx).WithValues("node", r.Name, "nodeGroup", r.Group.Id(), "kind", r.Mark.Kind)
	start := a.Clock.Now()
	err := a.replaceSteps(ctx, r)
	a.mu.Lock()
	delete(a.replacing, r.Name)
	if err == nil {
		a.replaced[r.Name] = a.Clock.Now()
	}
	a.mu.Unlock()
	if err != nil {
		logger.Error(err, "Replacement of a node the cloud takes away did not finish; the node stays marked and is tried again")
		a.Metrics.ReplaceFailed(r.Group.Id(), r.Mark.Kind)
		a.Events.OnNode(r.Node, corev1.EventTypeWarning, "NodeReplaceFailed", "%s: %v", r.Mark.Kind, err)
		return
	}
	since := a.Clock.Since(r.Mark.Sent)
	if r.Mark.Sent.IsZero() {
		since = a.Clock.Since(r.Mark.Received)
	}
	logger.Info("Node drained and deleted ahead of the cloud", "evicted", len(r.Pods), "took", a.Clock.Since(start).Round(time.Millisecond),
		"sinceEvent", since.Round(time.Millisecond))
	a.Metrics.Replaced(r.Group.Id(), r.Mark.Kind, since)
	a.Events.OnNode(r.Node, corev1.EventTypeNormal, "NodeReplaced", "node removed by tidal ahead of %s", r.Mark.Kind)
	a.Events.OnStatus(a.Status, corev1.EventTypeNormal, "NodeReplaced", "removed node %s of node group %s ahead of %s",
		r.Name, r.Group.Id(), r.Mark.Kind)
}

func (a *Live) replaceSteps(ctx context.Context, r Replacement) error {
	if err := a.drainUntil(ctx, r); err != nil {
		if !r.due.passed(a.Clock.Now()) {
			return err
		}
		klog.FromContext(ctx).Info("Drain not finished by the deadline; deleting the node anyway", "node", r.Name, "err", err)
	}
	a.evictDaemonSetPods(ctx, r.Removal)
	if err := bounded(ctx, "delete nodes", func(ctx context.Context) error { return r.Group.DeleteNodes(ctx, []*corev1.Node{r.Node}) }); err != nil {
		return fmt.Errorf("cloud provider: %w", err)
	}
	return nil
}

// drainUntil evicts the pods, retrying evictions a PDB refuses for
// --max-pod-eviction-time, and waits for those evicted to be gone, no
// longer than the deadline (as it is brought forward meanwhile). Each pod
// is asked to leave once even when the deadline has passed: it goes
// gracefully, and its controller recreates it at once.
func (a *Live) drainUntil(ctx context.Context, r Replacement) error {
	dueCtx, cancel := a.untilDue(ctx, r.due)
	defer cancel()
	until := interrupt.EvictUntil(r.Mark, a.Clock.Now(), a.Options.MaxPodEvictionTime)
	evicted, errs := a.evictAll(ctx, r.Pods, how{deadline: until, retry: true, stop: dueCtx.Done(), record: true})
	var gone []scaledown.Evicted
	for i, e := range evicted {
		if errs[i] == nil {
			gone = append(gone, e)
		}
	}
	return errors.Join(append(errs, a.waitGone(dueCtx, gone))...)
}

// markInterrupted writes the interruption annotation, the ToBeDeleted
// taint and a cordon (tidal's, undone only if tidal cordoned) in one
// update.
func markInterrupted(ctx context.Context, client kubernetes.Interface, node string, m interrupt.Mark, now time.Time) error {
	return updateNode(ctx, client, node, func(n *corev1.Node) bool {
		changed := markNode(n, toBeDeleted(now), true)
		if n.Annotations[interrupt.Annotation] != m.Value() {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[interrupt.Annotation] = m.Value()
			changed = true
		}
		return changed
	})
}
