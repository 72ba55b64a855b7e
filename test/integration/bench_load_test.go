package integration

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/util/retry"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
)

// The loader writes as the components that write these objects in a real
// cluster, so the API server records them as the field managers of what
// they wrote: kube-controller-manager creates ReplicaSets and pods, the
// kubelet registers nodes and writes running pods' status.
const (
	agentControllers = "kube-controller-manager/v1.36.3 (linux/amd64) kubernetes"
	agentKubelet     = "kubelet/v1.36.3 (linux/amd64) kubernetes"
	// loadWorkers is how many requests the loader has in flight.
	loadWorkers = 48
)

// loader loads a generated cluster into the API server.
type loader struct {
	controllers, kubelet kubernetes.Interface
	c                    *benchgen.Cluster
	// rsUIDs are the UIDs the API server gave the ReplicaSets, written
	// by the ReplicaSet step, read by the pod steps after it.
	mu     sync.Mutex
	rsUIDs map[string]types.UID
}

func newLoader(cfg *rest.Config, c *benchgen.Cluster) (*loader, error) {
	client := func(agent string) (kubernetes.Interface, error) {
		cc := rest.CopyConfig(cfg)
		cc.UserAgent = agent
		cc.QPS, cc.Burst = 5000, 10000
		return kubernetes.NewForConfig(cc)
	}
	l := &loader{c: c, rsUIDs: map[string]types.UID{}}
	var err error
	if l.controllers, err = client(agentControllers); err != nil {
		return nil, err
	}
	if l.kubelet, err = client(agentKubelet); err != nil {
		return nil, err
	}
	return l, nil
}

// load creates the cluster: ReplicaSets; running pods, bound to their node
// and given the status their kubelet writes; the nodes, as their kubelet
// registers them, as the local cloud's machines of the generated groups;
// the pending pods, which the scheduler then tries. Running pods come
// before their nodes so that the simulated kubelets find them running and
// leave them alone. It returns once the cluster has settled (see settled).
func (l *loader) load(ctx context.Context) error {
	if err := l.waitServiceAccount(ctx, benchgen.Namespace); err != nil {
		return err
	}
	for _, step := range []struct {
		what string
		n    int
		f    func(context.Context, int) error
	}{
		{"ReplicaSets", len(l.c.ReplicaSets), l.replicaSet},
		{"running pods", len(l.c.RunningPods), l.runningPod},
		{"nodes", len(l.c.Nodes), l.node},
		{"pending pods", len(l.c.PendingPods), l.pendingPod},
	} {
		start := time.Now()
		if err := benchParallel(ctx, step.n, step.f); err != nil {
			return fmt.Errorf("load %s: %w", step.what, err)
		}
		fmt.Fprintf(os.Stderr, "created %d %s in %v\n", step.n, step.what, time.Since(start).Round(time.Second))
	}
	return l.settled(ctx)
}

// waitServiceAccount waits for the ServiceAccount controller to create the
// default ServiceAccount of namespace ns, without which admission refuses
// pods there.
func (l *loader) waitServiceAccount(ctx context.Context, ns string) error {
	var err error
	if werr := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err = l.controllers.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); werr != nil {
		return fmt.Errorf("%w (last error: %v)", werr, err)
	}
	return nil
}

// parallel runs f for 0..n-1 on loadWorkers workers and returns the first
// error.
func benchParallel(ctx context.Context, n int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(loadWorkers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// replicaSet creates ReplicaSet i and records its UID.
func (l *loader) replicaSet(ctx context.Context, i int) error {
	rs := l.c.ReplicaSets[i].DeepCopy()
	rs.UID, rs.CreationTimestamp = "", metav1.Time{}
	for k := range rs.Spec.Template.Spec.Containers {
		rs.Spec.Template.Spec.Containers[k].Image = benchgen.PauseImage
	}
	created, err := l.controllers.AppsV1().ReplicaSets(rs.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ReplicaSet %s: %w", rs.Name, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rsUIDs[created.Name] = created.UID
	return nil
}

// submitted is pod p as its ReplicaSet's controller submits it.
func (l *loader) submitted(p *corev1.Pod) *corev1.Pod {
	s := benchgen.Submitted(p)
	s.CreationTimestamp = metav1.Time{}
	s.OwnerReferences[0].UID = l.rsUIDs[s.OwnerReferences[0].Name]
	return s
}

// runningPod creates running pod i on its node and writes the status its
// kubelet writes once the container runs.
func (l *loader) runningPod(ctx context.Context, i int) error {
	_, err := l.createRunning(ctx, i)
	return err
}

// createRunning is runningPod, returning the pod as its kubelet left it.
func (l *loader) createRunning(ctx context.Context, i int) (*corev1.Pod, error) {
	pod := l.submitted(l.c.RunningPods[i])
	created, err := l.controllers.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", l.c.RunningPods[i].Name, err)
	}
	j, q := i/l.c.Params.M, i%l.c.Params.M
	var running *corev1.Pod
	// On a node that exists the simulated kubelet may write the pod's
	// status first: it is then written again over it.
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		created.Status = benchgen.RunningStatus(created, benchgen.NodeIP(j), benchgen.PodIP(j, q), metav1.Now())
		running, err = l.kubelet.CoreV1().Pods(created.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if latest, gerr := l.kubelet.CoreV1().Pods(created.Namespace).Get(ctx, created.Name, metav1.GetOptions{}); gerr == nil {
				created = latest
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("status of pod %s: %w", created.Name, err)
	}
	return running, nil
}

// node registers node j as a machine of the local cloud's group.
func (l *loader) node(ctx context.Context, j int) error {
	n := benchload.LocalNode(l.c, j, metav1.Now())
	if _, err := l.kubelet.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nil
}

// pendingPod creates pending pod i.
func (l *loader) pendingPod(ctx context.Context, i int) error {
	_, err := l.createPending(ctx, l.c.PendingPods[i])
	return err
}

// createPending creates the generated pending pod p (or one like it) as its
// ReplicaSet's controller does.
func (l *loader) createPending(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	pod := l.submitted(p)
	created, err := l.controllers.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", p.Name, err)
	}
	return created, nil
}

// settled waits until the control plane has done what it does to a new
// cluster: the node lifecycle controller has taken the not-ready taint off
// every node, the scheduler has bound every pending pod that fits or found
// it unschedulable, and the simulated kubelets run the pods it bound. It
// counts every 2 s, or every second per 10,000 pods for a larger cluster
// (each count lists every pod), and says how far it is every minute.
func (l *loader) settled(ctx context.Context) error {
	pods := len(l.c.RunningPods) + len(l.c.PendingPods)
	interval := max(2*time.Second, time.Duration(pods/10000)*time.Second)
	var last string
	said, start := time.Now(), time.Now()
	err := wait.PollUntilContextTimeout(ctx, interval, 90*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := l.census(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = s.String()
		if time.Since(said) >= time.Minute {
			said = time.Now()
			fmt.Fprintf(os.Stderr, "settling for %v: %s\n", time.Since(start).Round(time.Second), last)
		}
		return s.settled(len(l.c.Nodes)), nil
	})
	if err != nil {
		return fmt.Errorf("cluster did not settle: %w (last: %s)", err, last)
	}
	return nil
}

// census counts what settled waits for.
type census struct {
	nodes, taintedNodes                              int
	running, boundNotRunning, unschedulable, untried int
}

func (s census) settled(nodes int) bool {
	return s.nodes == nodes && s.taintedNodes == 0 && s.boundNotRunning == 0 && s.untried == 0
}

func (s census) String() string {
	return fmt.Sprintf("%d nodes (%d not-ready tainted), %d pods running, %d bound not running, %d unschedulable, %d not tried",
		s.nodes, s.taintedNodes, s.running, s.boundNotRunning, s.unschedulable, s.untried)
}

func (l *loader) census(ctx context.Context) (census, error) {
	var s census
	nodes, err := l.controllers.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return s, err
	}
	s.nodes = len(nodes.Items)
	for _, n := range nodes.Items {
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady {
				s.taintedNodes++
			}
		}
	}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return l.controllers.CoreV1().Pods(benchgen.Namespace).List(ctx, opts)
	})
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		s.count(obj.(*corev1.Pod))
		return nil
	})
	return s, err
}

func (s *census) count(p *corev1.Pod) {
	switch {
	case p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning:
		s.running++
	case p.Spec.NodeName != "":
		s.boundNotRunning++
	case unschedulable(p):
		s.unschedulable++
	default:
		s.untried++
	}
}

func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}
