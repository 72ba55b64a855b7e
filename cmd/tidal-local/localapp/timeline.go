package localapp

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
)

// timeline prints, as things change, the pending pods, the nodes per pool,
// the replicas of each Deployment, and tidal's events.
type timeline struct {
	client kubernetes.Interface
	out    io.Writer
	start  time.Time

	mu         sync.Mutex
	last       string
	seenEvents map[types.UID]bool
	// waiting is the last WaitingForCapacity message of each autoscaler.
	waiting map[string]string
}

func newTimeline(client kubernetes.Interface, out io.Writer, start time.Time) *timeline {
	return &timeline{client: client, out: out, start: start, seenEvents: map[types.UID]bool{}, waiting: map[string]string{}}
}

// note prints a line of the demo's own.
func (t *timeline) note(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.out, "%s  ** %s\n", t.stamp(), fmt.Sprintf(format, args...))
}

func (t *timeline) stamp() string {
	return fmt.Sprintf("[%6.1fs]", time.Since(t.start).Seconds())
}

func (t *timeline) run(ctx context.Context) {
	fmt.Fprintln(t.out, "TIME       PENDING  RUNNING  NODES ready/total per pool              DEPLOYMENTS ready/desired")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		t.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (t *timeline) poll(ctx context.Context) {
	line, err := t.state(ctx)
	if err != nil {
		return
	}
	events := t.newEvents(ctx)
	waiting := t.waitingChanges(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if line != t.last {
		fmt.Fprintf(t.out, "%s  %s\n", t.stamp(), line)
		t.last = line
	}
	for _, e := range events {
		fmt.Fprintf(t.out, "%s    event %s\n", t.stamp(), e)
	}
	for _, w := range waiting {
		fmt.Fprintf(t.out, "%s    %s\n", t.stamp(), w)
	}
}

// waitingChanges returns the HorizontalPodAutoscalers' WaitingForCapacity
// conditions that changed since the last poll.
func (t *timeline) waitingChanges(ctx context.Context) []string {
	list, err := t.client.AutoscalingV2().HorizontalPodAutoscalers("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, h := range list.Items {
		for _, c := range h.Status.Conditions {
			if c.Type != controller.ConditionWaitingForCapacity {
				continue
			}
			key, msg := h.Namespace+"/"+h.Name, string(c.Status)+": "+c.Message
			if t.waiting[key] != msg {
				t.waiting[key] = msg
				out = append(out, fmt.Sprintf("hpa %s WaitingForCapacity=%s", key, msg))
			}
		}
	}
	return out
}

// state is the one-line summary of pods, nodes and deployments.
func (t *timeline) state(ctx context.Context) (string, error) {
	pods, err := t.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	nodes, err := t.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	deps, err := t.client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	pending, running := 0, 0
	for i := range pods.Items {
		switch {
		case core.IsUnschedulable(&pods.Items[i]):
			pending++
		case pods.Items[i].Status.Phase == corev1.PodRunning:
			running++
		}
	}
	var depParts []string
	for _, d := range deps.Items {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		depParts = append(depParts, fmt.Sprintf("%s/%s %d/%d", d.Namespace, d.Name, d.Status.ReadyReplicas, want))
	}
	sort.Strings(depParts)
	return fmt.Sprintf("%7d  %7d  %-38s  %s", pending, running, nodeSummary(nodes.Items), strings.Join(depParts, "  ")), nil
}

func nodeSummary(nodes []corev1.Node) string {
	type count struct{ ready, total int }
	pools := map[string]*count{}
	for i := range nodes {
		pool := nodes[i].Labels[local.NodeGroupLabel]
		if pool == "" {
			pool = "(other)"
		}
		if pools[pool] == nil {
			pools[pool] = &count{}
		}
		pools[pool].total++
		if core.IsNodeReady(&nodes[i]) {
			pools[pool].ready++
		}
	}
	names := make([]string, 0, len(pools))
	for n := range pools {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d/%d", n, pools[n].ready, pools[n].total)
	}
	return strings.Join(parts, "  ")
}

// newEvents returns tidal's events not shown yet, equal ones merged.
func (t *timeline) newEvents(ctx context.Context) []string {
	list, err := t.client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	counts := map[string]int{}
	var order []string
	t.mu.Lock()
	for _, e := range list.Items {
		if e.Source.Component != app.ComponentName || t.seenEvents[e.UID] {
			continue
		}
		t.seenEvents[e.UID] = true
		key := fmt.Sprintf("%s %s: %s", e.Reason, strings.ToLower(e.InvolvedObject.Kind), e.Message)
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	t.mu.Unlock()
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = k
		if counts[k] > 1 {
			out[i] = fmt.Sprintf("%s (x%d)", k, counts[k])
		}
	}
	return out
}
