package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// dryRunGroups is one group of 2-cpu nodes: a pod of 1500m fills a node.
const dryRunGroups = `
nodeGroups:
- {name: dr-a, minSize: 0, maxSize: 5, zone: zone-a, cpu: "2", memory: 4Gi, provisioningDelay: 300ms}
`

// mutationCounter counts the calls that change the cloud which reach it.
type mutationCounter struct {
	cloudprovider.CloudProvider
	calls *atomic.Int64
}

func (c mutationCounter) NodeGroups() []cloudprovider.NodeGroup {
	var out []cloudprovider.NodeGroup
	for _, g := range c.CloudProvider.NodeGroups() {
		out = append(out, countedGroup{g, c.calls})
	}
	return out
}

type countedGroup struct {
	cloudprovider.NodeGroup
	calls *atomic.Int64
}

func (g countedGroup) IncreaseSize(ctx context.Context, d int) error {
	g.calls.Add(1)
	return g.NodeGroup.IncreaseSize(context.Background(), d)
}

func (g countedGroup) DecreaseTargetSize(ctx context.Context, d int) error {
	g.calls.Add(1)
	return g.NodeGroup.DecreaseTargetSize(context.Background(), d)
}

func (g countedGroup) DeleteNodes(ctx context.Context, n []*corev1.Node) error {
	g.calls.Add(1)
	return g.NodeGroup.DeleteNodes(context.Background(), n)
}

// TestDryRunBesideARealTidal runs tidal in --dry-run beside a real tidal,
// both on one cloud. The shadow decides first each time: the scale-up and
// the removals it records are the ones the real tidal then carries out,
// and the shadow itself changes nothing (no cloud call, no taint, no write
// refused by its guard, which would mean it tried).
func TestDryRunBesideARealTidal(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "dr-")
	ns := newNamespace(t)
	path := writeGroups(t, dryRunGroups)
	cfg, err := local.ParseConfig([]byte(dryRunGroups))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testenv.LogOnFailure(context.Background(), t, 2))
	t.Cleanup(cancel)
	shared, err := local.New(cluster(t).Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var shadowCalls atomic.Int64
	flags := append(slices.Clone(scaleDownFlags), "--local-node-groups="+path)
	shadow := testenv.StartTidalWith(testenv.LogOnFailure(ctx, t, 2), t, cluster(t).KubeconfigPath,
		[]app.Option{app.WithCloud(func(cloudprovider.CloudProvider) cloudprovider.CloudProvider {
			return mutationCounter{shared, &shadowCalls}
		})}, append(slices.Clone(flags), "--dry-run", "--leader-elect=true")...)
	real := func() *tidal {
		return testenv.StartTidalWith(ctx, t, cluster(t).KubeconfigPath,
			[]app.Option{app.WithCloud(func(cloudprovider.CloudProvider) cloudprovider.CloudProvider { return shared })}, flags...)
	}

	// Alone, the shadow decides the scale-up and records it once.
	createDeployment(t, deployment(ns, "web", 3, "1500m", "100Mi"))
	waitMetric(t, shadow, `tidal_dry_run_decisions_total{kind="scale_up",node_group="dr-a"}`, 1)
	waitIterations(t, shadow, 3)
	checkShadow(t, shadow, &shadowCalls, `tidal_dry_run_decisions_total{kind="scale_up",node_group="dr-a"}`, 1)
	if v, _ := metricValue(shadow.Address, `tidal_dry_run_node_group_target_size{node_group="dr-a"}`); v != 3 {
		t.Errorf("shadow's would-be target size of dr-a: %v, want 3", v)
	}
	if n := nodeCount(t, "dr-a"); n != 0 {
		t.Fatalf("dr-a has %d nodes while only the shadow ran, want 0", n)
	}
	if len(groupEventSizes(t, "DryRunScaledUpGroup", "dr-a")) == 0 {
		t.Error("no DryRunScaledUpGroup event for dr-a")
	}
	would := podScaleUps(t, ns, "DryRunTriggeredScaleUp")
	if len(would) != 1 || would[0] != "[{dr-a 0->3 (max: 5)}] x3" {
		t.Fatalf("the shadow's DryRunTriggeredScaleUp events %v, want dr-a 0->3 on the 3 pods", would)
	}
	lease, err := cluster(t).Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "tidal-dry-run", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Errorf("the shadow's own Lease tidal-dry-run: %v, %v; want held", lease, err)
	}

	// The real tidal does what the shadow said.
	tl := real()
	waitRunning(t, ns, "web", 3, 90*time.Second)
	did := podScaleUps(t, ns, "TriggeredScaleUp")
	if !slices.Equal(did, would) {
		t.Errorf("real scale-ups of dr-a %v, the shadow's %v: want the same", did, would)
	}
	checkShadow(t, shadow, &shadowCalls, `tidal_dry_run_decisions_total{kind="scale_up",node_group="dr-a"}`, 1)

	// With the real tidal stopped, the load shrinks to one pod: the shadow
	// decides to remove the two nodes left empty, and leaves them as they are.
	if err := tl.Stop(t); err != nil {
		t.Fatalf("stop the real tidal: %v", err)
	}
	// The soft taints the real tidal put on the nodes while they were new
	// and empty go, so that any taint seen later is the shadow's.
	untaintAll(t, "dr-a")
	scaleDeployment(t, ns, "web", 1)
	waitRunning(t, ns, "web", 1, 60*time.Second)
	waitMetric(t, shadow, `tidal_dry_run_decisions_total{kind="scale_down",node_group="dr-a"}`, 2)
	waitIterations(t, shadow, 3)
	checkShadow(t, shadow, &shadowCalls, `tidal_dry_run_decisions_total{kind="scale_down",node_group="dr-a"}`, 2)
	toRemove := dryRunRemovals(t)
	if len(toRemove) != 2 {
		t.Fatalf("nodes the shadow would remove: %v, want 2", toRemove)
	}
	nodes, err := groupNodes(t, context.Background(), "dr-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		for _, taint := range n.Spec.Taints {
			if taint.Key == scaledown.DeletionCandidateTaint || taint.Key == scaledown.ToBeDeletedTaint {
				t.Errorf("node %s carries %s: the shadow must not taint", n.Name, taint.Key)
			}
		}
	}
	if len(nodes) != 3 {
		t.Fatalf("dr-a has %d nodes after the shadow's decision, want the 3 still there", len(nodes))
	}

	// The real tidal removes exactly those.
	real()
	poll(t, 90*time.Second, "the real tidal removes two dr-a nodes", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "dr-a")
		return len(nodes) == 1, err
	})
	nodes, err = groupNodes(t, context.Background(), "dr-a")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(toRemove, nodes[0].Name) {
		t.Errorf("the real tidal kept %s, which the shadow would have removed (%v)", nodes[0].Name, toRemove)
	}
	checkShadow(t, shadow, &shadowCalls, `tidal_dry_run_decisions_total{kind="scale_down",node_group="dr-a"}`, 2)
}

// untaintAll takes every soft deletion taint off group's nodes.
func untaintAll(t *testing.T, group string) {
	t.Helper()
	nodes, err := groupNodes(t, context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		updateNode(t, n.Name, func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == scaledown.DeletionCandidateTaint })
		})
	}
}

// waitMetric waits until a sample of tidal's metrics reaches want.
func waitMetric(t *testing.T, tl *tidal, sample string, want float64) {
	t.Helper()
	poll(t, 90*time.Second, fmt.Sprintf("%s >= %v", sample, want), func(context.Context) (bool, error) {
		v, err := metricValue(tl.Address, sample)
		return v >= want, err
	})
}

// checkShadow fails the test when the shadow changed anything or counted a
// standing decision more than once.
func checkShadow(t *testing.T, shadow *tidal, calls *atomic.Int64, decisions string, want float64) {
	t.Helper()
	if n := calls.Load(); n != 0 {
		t.Errorf("%d calls that change the cloud reached it from the shadow, want 0", n)
	}
	if n, err := testenv.MetricSum(shadow.Address, "tidal_dry_run_refused_writes_total"); err != nil || n != 0 {
		t.Errorf("the shadow's guard refused %v writes (%v): the shadow tried to act", n, err)
	}
	if v, err := metricValue(shadow.Address, decisions); err != nil || v != want {
		t.Errorf("%s = %v (%v), want %v: a standing decision counts once", decisions, v, err, want)
	}
}

// groupEventSizes lists the "size A -> B" parts of the events with reason
// about group, oldest first.
func groupEventSizes(t *testing.T, reason, group string) []string {
	t.Helper()
	evs, err := eventsFor(t, context.Background(), "kube-system", reason)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(evs, func(a, b corev1.Event) int { return a.FirstTimestamp.Compare(b.FirstTimestamp.Time) })
	var out []string
	for _, e := range evs {
		if !strings.Contains(e.Message, "node group "+group) {
			continue
		}
		if _, size, ok := strings.Cut(e.Message, "size "); ok {
			out = append(out, strings.Fields(size)[0]+" -> "+strings.Fields(size)[2])
		}
	}
	return out
}

// podScaleUps lists the scale-ups the events with reason in ns tell the
// pods of ("[{group from->to (max: n)}]"), each with how many pods heard it.
func podScaleUps(t *testing.T, ns, reason string) []string {
	t.Helper()
	evs, err := eventsFor(t, context.Background(), ns, reason)
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]map[string]bool{}
	for _, e := range evs {
		if i := strings.Index(e.Message, "[{"); i >= 0 {
			what := e.Message[i:]
			if pods[what] == nil {
				pods[what] = map[string]bool{}
			}
			pods[what][e.InvolvedObject.Name] = true
		}
	}
	var out []string
	for what, names := range pods {
		out = append(out, fmt.Sprintf("%s x%d", what, len(names)))
	}
	slices.Sort(out)
	return out
}

// dryRunRemovals names the nodes of the shadow's DryRunScaleDown events.
func dryRunRemovals(t *testing.T) []string {
	t.Helper()
	evs, err := eventsFor(t, context.Background(), "default", "DryRunScaleDown")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if strings.HasPrefix(e.InvolvedObject.Name, "dr-a") && !slices.Contains(out, e.InvolvedObject.Name) {
			out = append(out, e.InvolvedObject.Name)
		}
	}
	return out
}
