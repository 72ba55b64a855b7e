package podloop

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/test/faults"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// waitSettled waits until web has the replicas, all Ready, on as many nodes
// as they need, none being removed; then checks that no scale-up of the
// phase asked for more nodes than that.
func (s *faultScene) waitSettled(replicas int, timeout time.Duration) {
	s.t.Helper()
	since := time.Now()
	want := need(replicas)
	poll(s.t, timeout, fmt.Sprintf("%d Ready replicas on %d nodes", replicas, want), func(ctx context.Context) (bool, error) {
		return s.settled(ctx, replicas)
	})
	if got := s.cloud.MaxTargetSince(s.group, since); got > want {
		s.t.Errorf("%s: a scale-up took %s to %d nodes; %d replicas need %d", s.phases[len(s.phases)-1], s.group, got, replicas, want)
	}
}

// settled tells whether web has its replicas Ready (guarded too, once it
// exists), the group exactly the nodes they need, free of tidal's taints,
// and the autoscaler's status says so; if not, the error says what is
// missing.
func (s *faultScene) settled(ctx context.Context, replicas int) (bool, error) {
	d, err := cluster(s.t).Client.AppsV1().Deployments(s.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if r := int32(replicas); ptr.Deref(d.Spec.Replicas, 0) != r || d.Status.ReadyReplicas != r || d.Status.Replicas != r {
		return false, fmt.Errorf("web: %d replicas asked, %d there, %d Ready; want %d", ptr.Deref(d.Spec.Replicas, 0), d.Status.Replicas, d.Status.ReadyReplicas, r)
	}
	if g, err := cluster(s.t).Client.AppsV1().Deployments(s.ns).Get(ctx, "guarded", metav1.GetOptions{}); err == nil && g.Status.ReadyReplicas != 2 {
		return false, fmt.Errorf("guarded: %d Ready, want 2", g.Status.ReadyReplicas)
	}
	nodes, err := groupNodes(s.t, ctx, s.group)
	if err != nil {
		return false, err
	}
	if len(nodes) != need(replicas) {
		return false, fmt.Errorf("%d nodes, want %d; %s", len(nodes), need(replicas), s.scaleDownStatus(ctx))
	}
	for _, n := range nodes {
		for _, taint := range n.Spec.Taints {
			if taint.Key == scaledown.ToBeDeletedTaint || taint.Key == scaledown.DeletionCandidateTaint {
				return false, fmt.Errorf("node %s has the taint %s", n.Name, taint.Key)
			}
		}
	}
	pa, err := hpaPAClient(s.t).PodAutoscalers(s.ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if pa.Status.CurrentReplicas != int32(replicas) || pa.Status.DesiredReplicas != int32(replicas) {
		return false, fmt.Errorf("the autoscaler's status says %d current, %d desired; want %d", pa.Status.CurrentReplicas, pa.Status.DesiredReplicas, replicas)
	}
	return true, nil
}

// scaleDownStatus is what tidal's status ConfigMap says of scale-down.
func (s *faultScene) scaleDownStatus(ctx context.Context) string {
	cm, err := cluster(s.t).Client.CoreV1().ConfigMaps("kube-system").Get(ctx, "tidal-status", metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("no status: %v", err)
	}
	st := cm.Data["status"]
	if i := strings.Index(st, "scaleDown:"); i >= 0 {
		st = st[i:]
	}
	return "tidal's status: " + strings.Join(strings.Fields(st), " ")
}

// converge waits until everything has settled after the faults stopped,
// failing the test if that takes longer than limit, and returns how long it
// took.
func (s *faultScene) converge(limit time.Duration) time.Duration {
	s.t.Helper()
	from := time.Now()
	var took time.Duration
	poll(s.t, 3*limit, "both loops to settle after the faults stopped", func(ctx context.Context) (bool, error) {
		ok, err := s.settled(ctx, 2)
		took = time.Since(from)
		return ok, err
	})
	if took > limit {
		s.t.Errorf("the loops settled %v after the faults stopped, want within %v", took.Round(time.Millisecond), limit)
	}
	return took
}

// report logs what was injected and what tidal did, the figures of
// docs/faults.md.
func (s *faultScene) report(total, faulted, converged time.Duration, deleted, podEvents int) {
	t := s.t
	sum := func(name string) float64 {
		v, err := testenv.MetricSum(s.tidal.Address, name)
		if err != nil {
			t.Errorf("read %s: %v", name, err)
		}
		return v
	}
	value := func(sample string) float64 {
		v, err := metricValue(s.tidal.Address, sample)
		if err != nil {
			t.Errorf("read %s: %v", sample, err)
		}
		return v
	}
	counts, requests := s.api.Counts()
	var kinds []string
	injected := 0
	for _, k := range faults.AllKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, counts[k]))
		injected += counts[k]
	}
	t.Logf("API faults: %d of %d requests (%s)", injected, requests, strings.Join(kinds, ", "))
	t.Logf("cloud: %s", s.cloud)
	t.Logf("node loop: %v scale-ups (%v nodes), %v failed; %v nodes removed (%d deletions seen), %v removals failed; "+
		"evictions %v succeeded, %v refused and retried, %v failed; %v iterations ended in an error",
		sum("tidal_scale_ups_total"), sum("tidal_scaled_up_nodes_total"), sum("tidal_failed_scale_ups_total"),
		sum("tidal_scaled_down_nodes_total"), deleted, sum("tidal_failed_scale_downs_total"),
		value(`tidal_evicted_pods_total{eviction_result="succeeded"}`), value(`tidal_evicted_pods_total{eviction_result="retried"}`),
		value(`tidal_evicted_pods_total{eviction_result="failed"}`), sum("tidal_errors_total"))
	syncs := func(action string) (all, failed float64) {
		for _, e := range []string{"none", "metrics", "spec", "internal"} {
			v := value(fmt.Sprintf(`tidal_pod_autoscaler_reconciliations_total{action=%q,error=%q}`, action, e))
			all += v
			if e != "none" {
				failed += v
			}
		}
		return all, failed
	}
	up, upFailed := syncs("scale_up")
	down, downFailed := syncs("scale_down")
	_, idleFailed := syncs("none")
	t.Logf("pod loop: %v rescales up, %v down (%v of them in syncs that failed after the rescale); %v other syncs failed",
		up, down, upFailed+downFailed, idleFailed)
	t.Logf("nodes of %s over the run: %v; %d pod events of the PDB's namespace watched", s.group, s.nodes.reset(), podEvents)
	t.Logf("faults on for %v; settled %v after they stopped; %v in all", faulted.Round(time.Second), converged.Round(time.Millisecond), total.Round(time.Second))
}
