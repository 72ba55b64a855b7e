package core_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app/nodeopts"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
)

// Nodes asked for and not yet registered are upcoming: the pending pods
// they were asked for wait for them and ask for nothing more while they
// come. On bench-gen S1 (its nodes machines of a local cloud that is not
// started, so asked-for nodes never register; the pending pods all
// unschedulable: zoned, tainted-group and anti-affine ones among them),
// the first iteration asks for nodes and the next ones ask for none: the
// second decides anew (the groups' targets changed) and finds every pod a
// place, and the others reuse its decision.
func TestRequestedNodesAreAskedForOnce(t *testing.T) {
	const iterations = 5
	c := benchgen.Generate(benchgen.S1())
	var objs []runtime.Object
	for j := range c.Nodes {
		objs = append(objs, benchload.LocalNode(c, j, metav1.Now()))
	}
	for _, p := range c.RunningPods {
		objs = append(objs, p)
	}
	for _, p := range c.PendingPods {
		p = p.DeepCopy()
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		objs = append(objs, p)
	}
	for _, r := range c.ReplicaSets {
		objs = append(objs, r)
	}
	client := fake.NewClientset(objs...)
	cloud, err := local.New(client, benchload.LocalCloud(c))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(client, 0)
	defer func() { cancel(); factory.Shutdown() }()
	reg := prometheus.NewRegistry()
	// As in BenchmarkNodeLoop: a soft taint would change the snapshot.
	opts := config.NewOptions()
	opts.ScaleDown.MaxBulkSoftTaintCount = 0
	loop, err := core.NewNodeLoop(ctx, core.Config{Cloud: cloud, Client: client, Factory: factory, Metrics: core.NewMetrics(reg, false),
		Recorder: record.NewFakeRecorder(100_000), Options: nodeopts.FromConfig(opts)})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), loop.HasSynced) {
		t.Fatal("handlers did not sync")
	}
	targets := func() []int {
		var out []int
		for _, g := range cloud.NodeGroups() {
			n, err := g.TargetSize()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		return out
	}
	before := targets()
	var after []int
	for i := range iterations {
		if err := loop.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		seen(t, ctx, client, factory)
		now := targets()
		if i == 0 {
			after = now
			if slices.Equal(now, before) {
				t.Fatalf("the first iteration asked for no node: targets %v", now)
			}
		} else if !slices.Equal(now, after) {
			t.Fatalf("iteration %d asked for nodes again for the same pods: targets %v → %v → %v", i, before, after, now)
		}
	}
	if decided := decisions(t, reg); decided != 2 {
		t.Errorf("the scale-up was decided anew %d times in %d iterations, want 2 (the others reused)", decided, iterations)
	}
}

// seen waits until the informers saw the nominations the loop wrote, so
// that the next iteration's snapshot is the same whenever it runs.
func seen(t *testing.T, ctx context.Context, client *fake.Clientset, factory informers.SharedInformerFactory) {
	t.Helper()
	lister := factory.Core().V1().Pods().Lister()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			cached, err := lister.Pods(p.Namespace).Get(p.Name)
			if err != nil || cached.Status.NominatedNodeName != p.Status.NominatedNodeName {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("informers did not see the loop's nominations: %v", err)
	}
}

// decisions counts the scale-up decisions made anew (not reused).
func decisions(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "tidal_function_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "scaleUp:filterSchedulable" {
					return int(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}
