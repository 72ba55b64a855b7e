package podloop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/test/faults"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// The fault scenario's rates: a share of every API request of tidal's
// fails (each kind alike), and of the cloud's IncreaseSize and DeleteNodes
// calls some fail and some are slow.
const (
	faultSeed      = 20260612
	apiFaultRate   = 0.2
	cloudErrorRate = 0.3
	cloudSlowRate  = 0.2
	cloudSlow      = time.Second
)

// faultScene is the scenario's cluster: web, 1.5 CPU per replica under a
// PodAutoscaler (two replicas fill a 4-CPU node), and guarded, two small
// pods never on the same node, under a PDB that keeps one. (A node holding
// more pods of a PDB than it lets go at once would stay for good, as in
// Cluster Autoscaler: its drain is never allowed.)
type faultScene struct {
	t      *testing.T
	ns     string
	group  string
	sim    *metrics.Simulated
	api    *faults.Transport
	cloud  *faults.CloudFaults
	tidal  *tidal
	nodes  *series
	phases []string
}

// need is how many nodes replicas of web need: two per node, and the two
// guarded pods need two nodes.
func need(replicas int) int { return max(2, (replicas+1)/2) }

// TestLoopsUnderAPIAndCloudFaults runs both loops through scale-ups,
// PDB-guarded scale-downs and rescales while the API server and the cloud
// fail, then stops the faults. While they last no node is deleted under a
// pod, no PDB is broken and no scale-up asks for more nodes than the pods
// need; once they stop, both loops settle within a minute.
func TestLoopsUnderAPIAndCloudFaults(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	s := newFaultScene(t, "fz-pool")
	deletions := testenv.WatchNodeDeletions(t, cluster(t).Client, local.NodeGroupLabel+"="+s.group)
	pdbs := testenv.WatchPDBs(t, cluster(t).Client, s.ns)
	start := time.Now()

	for i, step := range []struct {
		rps, replicas int
		what          string
	}{
		{80, 8, "a step up: 8 replicas on 4 nodes"},
		{20, 2, "the load falls: 2 replicas; the two nodes of the guarded pods drained through their PDB"},
		{60, 6, "a smaller step: 6 replicas on 3 nodes"},
		{20, 2, "the load falls again"},
		{80, 8, "the big step again"},
	} {
		s.load(step.rps, step.what)
		s.waitSettled(step.replicas, 3*time.Minute)
		if i == 0 {
			s.placeForDrains(pdbs)
		}
	}
	s.load(20, "the load falls a last time; the faults stop once the replicas are down")
	hpaWaitReplicas(t, s.ns, "web", 2, 2*time.Minute)
	s.api.SetEnabled(false)
	s.cloud.SetEnabled(false)
	faultsOff := time.Now()
	converged := s.converge(time.Minute)

	deleted, lost := deletions.Check(t, s.ns)
	violations, podEvents := pdbs.Result()
	s.report(time.Since(start), faultsOff.Sub(start), converged, deleted, podEvents)
	if len(lost) > 0 {
		t.Errorf("nodes deleted under their pods:\n%s", strings.Join(lost, "\n"))
	}
	if len(violations) > 0 {
		t.Errorf("%d PDB violations, first: %v", len(violations), violations[:min(5, len(violations))])
	}
	if deleted < 5 {
		t.Errorf("only %d nodes removed: the scenario did not exercise scale-down", deleted)
	}
	if evicted, _ := metricValue(s.tidal.Address, `tidal_evicted_pods_total{eviction_result="succeeded"}`); evicted < 2 {
		t.Errorf("%v pods evicted: the guarded pods were not drained", evicted)
	}
	apiFaults, _ := s.api.Counts()
	cloudFaults, _ := s.cloud.Counts()
	if len(apiFaults) == 0 || len(cloudFaults) == 0 {
		t.Errorf("API faults %v, cloud faults %v: the scenario ran without faults", apiFaults, cloudFaults)
	}
}

func newFaultScene(t *testing.T, group string) *faultScene {
	deleteNodesOnCleanup(t, group+"-")
	s := &faultScene{t: t, ns: hpaNamespace(t), group: group, sim: metrics.NewSimulated(), nodes: &series{},
		api:   faults.New(faultSeed, faults.Rule{Rate: apiFaultRate, Kinds: faults.AllKinds}),
		cloud: faults.NewCloudFaults(faultSeed, cloudErrorRate, cloudSlowRate, cloudSlow)}
	t.Logf("seed %d", faultSeed)
	s.sim.Set(s.ns+"/requests", metrics.Constant(20))
	groups := fmt.Sprintf("nodeGroups:\n- {name: %s, minSize: 1, maxSize: 6, initialSize: 1, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 2s}\n", group)
	runCtx := testenv.LogOnFailure(context.Background(), t, 2)
	// The scan interval is tidal's default: scale-ups follow unschedulable
	// pods and the pod loop's rescales, removals their due time, as on a
	// user's cluster; short timers elsewhere keep the scenario quick.
	s.tidal = testenv.StartTidalWith(runCtx, t, cluster(t).KubeconfigPath, []app.Option{app.WithTransport(s.api.Wrap), app.WithCloud(s.cloud.Wrap),
		app.WithSimulatedMetrics(s.sim), app.WithLocalCloudClient(cluster(t).Client)},
		"--leader-elect=false", "--local-node-groups="+writeGroups(t, groups), "--scan-interval=10s",
		"--hpa-metrics-source=simulated", "--hpa-sync-period=5s", "--hpa-downscale-stabilization=3s",
		"--scale-down-unneeded-time=2s", "--scale-down-delay-after-add=0s", "--scale-down-delay-after-delete=0s",
		"--scale-down-delay-after-failure=2s", "--node-delete-delay-after-taint=2s",
		"--initial-node-group-backoff-duration=2s", "--max-node-group-backoff-duration=10s")
	waitFirstNodeReady(t, group, time.Minute)
	web := deployment(s.ns, "web", 2, "1500m", "1Gi")
	web.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: group}
	create(t, cluster(t).Client.AppsV1().Deployments(s.ns).Create, web)
	hpaCreatePA(t, faultAutoscaler(s.ns))
	hpaWaitRunning(t, s.ns, "web", 2)
	stop := watchCounts(t, s.ns, group, &series{}, s.nodes, &messages{})
	t.Cleanup(stop)
	return s
}

// faultAutoscaler scales web on requests per second, 10 per replica, up to
// 8, at once both ways (after a short stabilization down).
func faultAutoscaler(ns string) *v1alpha1.PodAutoscaler {
	return hpaPodsAutoscaler(ns, "web", "requests", 10, 8, &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 10, PeriodSeconds: 15}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](3)},
	})
}

// load sets the requests per second and starts a phase.
func (s *faultScene) load(rps int, phase string) {
	s.t.Logf("%s (%d requests/s); so far: %s; cloud: %s", phase, rps, s.api, s.cloud)
	s.phases = append(s.phases, phase)
	s.sim.Set(s.ns+"/requests", metrics.Constant(float64(rps)))
}

// placeForDrains arranges the four nodes of the first step so that the
// next scale-down must drain guarded pods through their PDB: the web pods
// the ReplicaSet keeps when it scales down are on the first two nodes, the
// guarded pods on the other two, which are then the emptiest.
func (s *faultScene) placeForDrains(pdbs *testenv.PDBWatcher) {
	nodes, err := groupNodes(s.t, context.Background(), s.group)
	if err != nil || len(nodes) != 4 {
		s.t.Fatalf("%d nodes (%v), want 4", len(nodes), err)
	}
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	for _, n := range nodes[:2] {
		s.keepAWebPodOn(n.Name)
	}
	s.guarded(pdbs, nodes[2].Name, nodes[3].Name)
}

// keepAWebPodOn gives one web pod of the node a high deletion cost, so
// that the ReplicaSet keeps it when it scales down.
func (s *faultScene) keepAWebPodOn(node string) {
	ctx := context.Background()
	pods, err := cluster(s.t).Client.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web",
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil || len(pods.Items) == 0 {
		s.t.Fatalf("no web pod on %s (%v)", node, err)
	}
	patch := []byte(`{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"1000"}}}`)
	if _, err := cluster(s.t).Client.CoreV1().Pods(s.ns).Patch(ctx, pods.Items[0].Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// guarded adds two pods, never on the same node and preferably on the
// given ones, under a PDB that keeps one, and has the watcher check it
// from then on.
func (s *faultScene) guarded(pdbs *testenv.PDBWatcher, prefer ...string) {
	t := s.t
	g := deployment(s.ns, "guarded", 2, "100m", "128Mi")
	g.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: s.group}
	g.Spec.Template.Spec.Affinity = &corev1.Affinity{
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: g.Spec.Selector.MatchLabels}, TopologyKey: corev1.LabelHostname}}},
		NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: prefer}}}}}},
	}
	create(t, cluster(s.t).Client.AppsV1().Deployments(s.ns).Create, g)
	create(t, cluster(s.t).Client.PolicyV1().PodDisruptionBudgets(s.ns).Create, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: s.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: g.Spec.Selector}})
	pdbs.Guard("guarded", 1)
	hpaWaitRunning(t, s.ns, "guarded", 2)
}
