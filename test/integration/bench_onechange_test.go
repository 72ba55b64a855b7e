package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tidal-autoscaler/tidal/benchgen"
)

// oneChange makes the changes of BenchmarkNodeLoop's onechange, one per
// iteration, in turn:
//
//   - added: a pending pod added, a new replica of a ReplicaSet whose
//     generated pods the scheduler left unschedulable, created as the
//     loader creates pending pods; the scheduler tries it;
//   - deleted: that pod deleted;
//   - running-deleted: a running pod deleted from its node (the simulated kubelet
//     confirms its end), one whose room, with its node's free room, fits
//     no pending pod, so that the scheduler binds none there;
//   - recreated: that pod created again, bound to the same node and given its
//     kubelet's status, as the loader creates running pods.
//
// Before an iteration's timer starts, next waits until tidal's pod informer
// holds the change's outcome: the added pod tried by the scheduler (left
// unschedulable, or bound and running), a deleted pod gone, the new pod
// at the resource version of its kubelet's status or later.
type oneChange struct {
	e *benchEnv
	// pending is the generated form of the added pod; running is the
	// index of the deleted running pod in the generated running pods.
	pending *corev1.Pod
	running int
	// step is the next change; uid the UID of the pod it acts on.
	step int
	uid  types.UID
	// took is the iteration time (RunOnce) of each kind of change, summed
	// over every run of the benchmark, and how many.
	took [len(changeKinds)][2]float64
}

var changeKinds = [...]string{"added", "deleted", "running-deleted", "recreated"}

func newOneChange(b *testing.B, e *benchEnv, t *benchTidal) *oneChange {
	b.Helper()
	ch := &oneChange{e: e, running: -1}
	pods := t.factory.Core().V1().Pods().Lister().Pods(benchgen.Namespace)
	replicas := map[string]int{}
	for _, p := range e.c.PendingPods {
		replicas[p.OwnerReferences[0].Name]++
	}
	for _, p := range e.c.PendingPods {
		if got, err := pods.Get(p.Name); err == nil && unschedulable(got) {
			ch.pending = p.DeepCopy()
			break
		}
	}
	if ch.pending == nil {
		b.Fatal("the scheduler left no generated pending pod unschedulable")
	}
	// The new replica is named as the generator names its group's pods.
	ch.pending.Name = fmt.Sprintf("%s-%05d", ch.pending.Name[:strings.LastIndex(ch.pending.Name, "-")],
		replicas[ch.pending.OwnerReferences[0].Name])
	ch.pending.UID = types.UID("uid-" + ch.pending.Name)
	if ch.running = roomlessRunningPod(e.c); ch.running < 0 {
		b.Fatal("every running pod's room, with its node's free room, fits a pending pod")
	}
	return ch
}

// roomlessRunningPod is the first running pod whose CPU request, with its
// node's CPU left free by the generated running pods, is less than any
// pending pod's CPU request, or -1.
func roomlessRunningPod(c *benchgen.Cluster) int {
	least := int64(-1)
	for _, p := range c.PendingPods {
		if v := podCPU(p); least < 0 || v < least {
			least = v
		}
	}
	used := map[string]int64{}
	for _, p := range c.RunningPods {
		used[p.Spec.NodeName] += podCPU(p)
	}
	free := map[string]int64{}
	for _, n := range c.Nodes {
		free[n.Name] = n.Status.Allocatable.Cpu().MilliValue() - used[n.Name]
	}
	for i, p := range c.RunningPods {
		if free[p.Spec.NodeName]+podCPU(p) < least {
			return i
		}
	}
	return -1
}

// podCPU is the pod's CPU request in millicores.
func podCPU(p *corev1.Pod) int64 {
	var m int64
	for _, c := range p.Spec.Containers {
		m += c.Resources.Requests.Cpu().MilliValue()
	}
	return m
}

// outcomeWait is how long next waits for a change's outcome. At S3 the
// scheduler may take minutes to try an added pod: every 5 minutes it puts
// the 1,250 pods it left unschedulable back in its queue, each tried on
// 5,000 nodes, ahead of the new pod, which was queued later.
const outcomeWait = 20 * time.Minute

// next makes the next change and waits until tidal's informers hold its
// outcome.
func (ch *oneChange) next(b *testing.B, t *benchTidal) {
	b.Helper()
	ctx := context.Background()
	client := ch.e.l.controllers.CoreV1().Pods(benchgen.Namespace)
	var name string
	var seen func(*corev1.Pod) bool // nil: seen once gone
	switch ch.step % len(changeKinds) {
	case 0:
		created, err := ch.e.l.createPending(ctx, ch.pending)
		if err != nil {
			b.Fatal(err)
		}
		name, ch.uid = created.Name, created.UID
		seen = func(p *corev1.Pod) bool {
			return p.UID == ch.uid && (unschedulable(p) || p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning)
		}
	case 1, 2:
		name = ch.pending.Name
		if ch.step%len(changeKinds) == 2 {
			name = ch.e.c.RunningPods[ch.running].Name
		}
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			b.Fatalf("delete pod %s: %v", name, err)
		}
	case 3:
		created, err := ch.e.l.createRunning(ctx, ch.running)
		if err != nil {
			b.Fatal(err)
		}
		name, ch.uid = created.Name, created.UID
		rv := resourceVersion(b, created)
		seen = func(p *corev1.Pod) bool { return p.UID == ch.uid && resourceVersion(b, p) >= rv }
	}
	pods := t.factory.Core().V1().Pods().Lister().Pods(benchgen.Namespace)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, outcomeWait, true, func(context.Context) (bool, error) {
		p, err := pods.Get(name)
		switch {
		case apierrors.IsNotFound(err):
			last = "gone"
			return seen == nil, nil
		case err != nil:
			return false, err
		}
		last = fmt.Sprintf("uid %s, phase %s, node %q, unschedulable %v", p.UID, p.Status.Phase, p.Spec.NodeName, unschedulable(p))
		return seen != nil && seen(p), nil
	})
	if err != nil {
		b.Fatalf("tidal's informer did not see pod %s %s: %v (last: %s)", name, changeKinds[ch.step%len(changeKinds)], err, last)
	}
	ch.step++
}

// observe records the iteration time of the change made last.
func (ch *oneChange) observe(d time.Duration) {
	k := (ch.step - 1) % len(changeKinds)
	ch.took[k] = [2]float64{ch.took[k][0] + float64(d.Microseconds())/1000, ch.took[k][1] + 1}
}

// report adds each kind of change's mean iteration time, in ms, over every
// run so far, to b's results.
func (ch *oneChange) report(b *testing.B) {
	for k, name := range changeKinds {
		if v := ch.took[k]; v[1] > 0 {
			b.ReportMetric(v[0]/v[1], name+"-ms")
		}
	}
}

// resourceVersion is the pod's resource version as a number, as etcd
// gives them: later writes have greater ones.
func resourceVersion(b *testing.B, p *corev1.Pod) uint64 {
	v, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
	if err != nil {
		b.Fatalf("pod %s: resource version %q: %v", p.Name, p.ResourceVersion, err)
	}
	return v
}
