package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// scaleDownFlags make scale-down act within seconds.
var scaleDownFlags = []string{"--scan-interval=1s", "--leader-elect=false", "--scale-down-unneeded-time=2s",
	"--scale-down-delay-after-add=0s", "--scale-down-delay-after-delete=0s", "--scale-down-delay-after-failure=0s"}

// preloadNodes brings the groups of a local-cloud file to their initial
// sizes before tidal runs (tidal's own local cloud adopts them), so tests can
// place pods on the nodes first.
func preloadNodes(t *testing.T, groupsYAML string) {
	t.Helper()
	cfg, err := local.ParseConfig([]byte(groupsYAML))
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, g := range cfg.NodeGroups {
		if g.InitialSize != nil {
			want += *g.InitialSize
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := local.New(cluster(t).Client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, fmt.Sprintf("%d preloaded nodes Ready", want), func(ctx context.Context) (bool, error) {
		ready := 0
		for _, g := range cfg.NodeGroups {
			nodes, err := groupNodes(t, ctx, g.Name)
			if err != nil {
				return false, err
			}
			for i := range nodes {
				if isReady(&nodes[i]) && onlyTaints(nodes[i].Spec.Taints, g.Taints) {
					ready++
				}
			}
		}
		return ready == want, nil
	})
}

// onlyTaints tells whether a node carries no taint but its group's own.
func onlyTaints(taints, own []corev1.Taint) bool {
	for _, t := range taints {
		if !slices.ContainsFunc(own, func(o corev1.Taint) bool { return o.Key == t.Key && o.Effect == t.Effect }) {
			return false
		}
	}
	return true
}

// spread asks the scheduler (not tidal's simulation, which only runs the
// required filters) to put a Deployment's pods on different nodes.
func spread(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels}, TopologyKey: corev1.LabelHostname,
		}}}}}
	return d
}

// onNode asks the scheduler to prefer one node, without requiring it.
func onNode(d *appsv1.Deployment, node string) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}}
	return d
}

func minAvailablePDB(ns, app string, n int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}
}

func createPDB(t *testing.T, pdb *policyv1.PodDisruptionBudget) {
	t.Helper()
	if _, err := cluster(t).Client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PDB %s: %v", pdb.Name, err)
	}
}

func TestScaleDownDrainsAnUnderutilizedNode(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "sd-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: sd-a, minSize: 0, maxSize: 5, initialSize: 2, zone: z, cpu: '4', memory: 16Gi}\n"
	preloadNodes(t, groups)
	createDeployment(t, spread(deployment(ns, "web", 2, "1500m", "1Gi")))
	pods := waitRunning(t, ns, "web", 2, 30*time.Second)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Fatalf("the scheduler put both pods on %s; the test needs them apart", pods[0].Spec.NodeName)
	}
	startTidal(t, append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups))...)
	poll(t, 60*time.Second, "the group to shrink to 1 node", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "sd-a")
		return len(nodes) == 1, err
	})
	nodes, _ := groupNodes(t, context.Background(), "sd-a")
	for _, p := range waitRunning(t, ns, "web", 2, 30*time.Second) {
		if p.Spec.NodeName != nodes[0].Name {
			t.Fatalf("pod %s runs on %s, not on the remaining node %s", p.Name, p.Spec.NodeName, nodes[0].Name)
		}
	}
	if taints := nodes[0].Spec.Taints; len(taints) != 0 {
		t.Fatalf("the remaining node keeps taints %v", taints)
	}
	poll(t, 10*time.Second, "ScaleDown events on the evicted pod", func(ctx context.Context) (bool, error) {
		events, err := eventsFor(t, ctx, ns, "ScaleDown")
		return len(events) > 0 && strings.Contains(events[0].Message, "deleting pod for node scale down"), err
	})
}

func TestScaleDownKeepsNodesAndSaysWhy(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "keep-", "kmin-")
	ns := newNamespace(t)
	cases := []string{"anchor", "pdb", "noevict", "disabled", "system", "emptydir", "bare"}
	groups := fmt.Sprintf("nodeGroups:\n- {name: keep, minSize: 0, maxSize: 20, initialSize: %d, zone: z, cpu: '8', memory: 32Gi}\n"+
		"- {name: kmin, minSize: 2, maxSize: 4, initialSize: 2, zone: z, cpu: '4', memory: 16Gi}\n", len(cases))
	preloadNodes(t, groups)
	nodes, _ := groupNodes(t, context.Background(), "keep")
	node := map[string]string{}
	for i, c := range cases {
		node[c] = nodes[i].Name
	}
	ctx := context.Background()
	bare := func(name, nodeName, namespace string, edit func(*corev1.Pod)) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resourceQ("500m")}}}}}}
		if edit != nil {
			edit(p)
		}
		if _, err := cluster(t).Client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The anchor node stays because of a pod nothing recreates; every other
	// node has one blocker, and room for its pod on the anchor.
	bare("anchor", node["anchor"], ns, nil)
	bare("bare", node["bare"], ns, nil)
	createDeployment(t, onNode(deployment(ns, "guarded", 1, "500m", "1Gi"), node["pdb"]))
	createPDB(t, minAvailablePDB(ns, "guarded", 1))
	noevict := onNode(deployment(ns, "noevict", 1, "500m", "1Gi"), node["noevict"])
	noevict.Spec.Template.Annotations = map[string]string{scaledown.SafeToEvictAnnotation: "false"}
	createDeployment(t, noevict)
	createDeployment(t, onNode(deployment(ns, "plain", 1, "500m", "1Gi"), node["disabled"]))
	annotateNode(t, node["disabled"], scaledown.ScaleDownDisabledAnnotation, "true")
	createDeployment(t, onNode(deployment(metav1.NamespaceSystem, "sysagent-"+ns, 1, "500m", "1Gi"), node["system"]))
	t.Cleanup(func() {
		_ = cluster(t).Client.AppsV1().Deployments(metav1.NamespaceSystem).Delete(ctx, "sysagent-"+ns, metav1.DeleteOptions{})
	})
	scratch := onNode(deployment(ns, "scratch", 1, "500m", "1Gi"), node["emptydir"])
	scratch.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	createDeployment(t, scratch)
	for _, app := range []string{"guarded", "noevict", "plain", "scratch"} {
		waitRunning(t, ns, app, 1, 30*time.Second)
	}
	waitRunning(t, metav1.NamespaceSystem, "sysagent-"+ns, 1, 30*time.Second)

	startTidal(t, append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups))...)
	want := map[string]string{
		"anchor": "NotReplicated", "bare": "NotReplicated (no controller would recreate it)", "pdb": "NotEnoughPdb",
		"noevict": "NotSafeToEvictAnnotation", "disabled": "ScaleDownDisabledAnnotation",
		"system": "UnmovableKubeSystemPod", "emptydir": "LocalStorageRequested",
	}
	poll(t, 30*time.Second, "every node's reason in the status ConfigMap", func(ctx context.Context) (bool, error) {
		st, err := statusNow(ctx, t)
		if err != nil {
			return false, err
		}
		got := map[string]string{}
		for _, u := range st.ClusterWide.ScaleDown.Unremovable {
			got[u.Node] = u.Reason
		}
		for c, reason := range want {
			if !strings.Contains(got[node[c]], reason) {
				return false, fmt.Errorf("node %s (%s): reason %q, want %q", node[c], c, got[node[c]], reason)
			}
		}
		mins := 0
		for _, u := range st.ClusterWide.ScaleDown.Unremovable {
			if strings.HasPrefix(u.Node, "kmin-") && strings.Contains(u.Reason, "NodeGroupMinSizeReached") {
				mins++
			}
		}
		if mins != 2 {
			return false, fmt.Errorf("%d kmin nodes at min size in the status, want 2", mins)
		}
		return true, nil
	})
	st := readStatus(t)
	for _, u := range st.ClusterWide.ScaleDown.Unremovable {
		if u.Node == node["pdb"] && !strings.Contains(u.Reason, "guarded") {
			t.Fatalf("the PDB reason does not name the blocking pod or PDB: %q", u.Reason)
		}
	}
	time.Sleep(4 * time.Second) // two unneeded-times: nothing may have gone
	if n, m := nodeCount(t, "keep"), nodeCount(t, "kmin"); n != len(cases) || m != 2 {
		t.Fatalf("keep has %d nodes (want %d), kmin %d (want 2)", n, len(cases), m)
	}
}

func annotateNode(t *testing.T, name, key, value string) {
	t.Helper()
	updateNode(t, name, func(n *corev1.Node) { metav1.SetMetaDataAnnotation(&n.ObjectMeta, key, value) })
}

func TestScaleDownAbandonsARefusedDrain(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "ab-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: ab-a, minSize: 0, maxSize: 5, initialSize: 2, zone: z, cpu: '4', memory: 16Gi}\n"
	preloadNodes(t, groups)
	createDeployment(t, spread(deployment(ns, "web", 2, "1500m", "1Gi")))
	waitRunning(t, ns, "web", 2, 30*time.Second)
	// Two PDBs over the same pods: the planner sees room in both, but the
	// Eviction API refuses pods with more than one PDB.
	createPDB(t, minAvailablePDB(ns, "web", 1))
	second := minAvailablePDB(ns, "web", 1)
	second.Name = "web-too"
	createPDB(t, second)
	poll(t, 20*time.Second, "both PDBs to allow a disruption", func(ctx context.Context) (bool, error) {
		list, err := cluster(t).Client.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		for _, p := range list.Items {
			if p.Status.DisruptionsAllowed < 1 {
				return false, err
			}
		}
		return len(list.Items) == 2, err
	})
	// A refused drain ends with its node's taint taken off. With no delay
	// after a failure tidal may try the node again at once, so the
	// untainted moment can be brief: the nodes are followed, not polled.
	untainted := make(chan string, 16)
	tainted := map[string]bool{}
	testenv.FollowNodes(t, cluster(t).Client, local.NodeGroupLabel+"=ab-a", func(ev watch.Event) {
		n, ok := ev.Object.(*corev1.Node)
		if !ok || ev.Type == watch.Deleted {
			return
		}
		was := tainted[n.Name]
		tainted[n.Name] = hasToBeDeleted(n)
		if was && !tainted[n.Name] {
			select {
			case untainted <- n.Name:
			default:
			}
		}
	})
	startTidal(t, append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups), "--max-pod-eviction-time=2s")...)
	poll(t, 60*time.Second, "a ScaleDownFailed event", func(ctx context.Context) (bool, error) {
		events, err := eventsFor(t, ctx, "default", "ScaleDownFailed")
		for _, e := range events {
			if strings.HasPrefix(e.InvolvedObject.Name, "ab-a-") {
				return true, nil
			}
		}
		return false, err
	})
	select {
	case name := <-untainted:
		t.Logf("the refused drain of %s ended with its taint taken off", name)
	case <-time.After(60 * time.Second):
		t.Fatal("no node's ToBeDeleted taint was taken off after the refused drain")
	}
	if nodes, err := groupNodes(t, context.Background(), "ab-a"); err != nil || len(nodes) != 2 {
		t.Fatalf("ab-a has %d nodes (%v), want 2: a node went although its drain was refused", len(nodes), err)
	}
	// Without the second PDB the drain goes through.
	if err := cluster(t).Client.PolicyV1().PodDisruptionBudgets(ns).Delete(context.Background(), "web-too", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "the node to go once the eviction is allowed", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "ab-a")
		return len(nodes) == 1, err
	})
	waitRunning(t, ns, "web", 2, 30*time.Second)
}

func hasToBeDeleted(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == scaledown.ToBeDeletedTaint {
			return true
		}
	}
	return false
}

// buildTidal builds the tidal binary once per test run, into the
// repository's bin/ (ignored by git), for tests that run it as a process.
func buildTidal(t *testing.T) string { return mustBuild(t, tidalBinary) }

// buildTidalLocal builds tidal-local (what make run runs) in the same way.
func buildTidalLocal(t *testing.T) string { return mustBuild(t, tidalLocalBinary) }

func mustBuild(t *testing.T, build func() (string, error)) string {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var (
	tidalBinary      = sync.OnceValues(func() (string, error) { return goBuild("./cmd/tidal", "tidal-integration") })
	tidalLocalBinary = sync.OnceValues(func() (string, error) { return goBuild("./cmd/tidal-local", "tidal-local-integration") })
)

// goBuild builds the command pkg of this repository into bin/name.
func goBuild(pkg, name string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(root, "bin", name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

func TestScaleDownKilledMidDrainLeavesNoTaintAndNoLostPod(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "kd-")
	ns := newNamespace(t)
	bin := buildTidal(t)
	groups := "nodeGroups:\n- {name: kd-a, minSize: 0, maxSize: 5, initialSize: 2, zone: z, cpu: '4', memory: 16Gi}\n"
	groupsFile := writeGroups(t, groups)
	preloadNodes(t, groups)
	createDeployment(t, spread(deployment(ns, "web", 2, "1500m", "1Gi")))
	// A finalizer holds every pod once it is evicted: the drain stalls
	// while it waits for them to go.
	ctx := context.Background()
	release := holdPods(t, ns, waitRunning(t, ns, "web", 2, 30*time.Second))

	run := func(extra ...string) *exec.Cmd {
		args := append([]string{"--kubeconfig=" + cluster(t).KubeconfigPath, "--address=127.0.0.1:0", "--cloud-provider=local",
			"--local-node-groups=" + groupsFile}, append(scaleDownFlags, extra...)...)
		cmd := exec.Command(bin, args...)
		logPath := filepath.Join(t.TempDir(), "tidal.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			logFile.Close()
			if t.Failed() {
				out, _ := os.ReadFile(logPath)
				t.Logf("log of the tidal process:\n%s", out)
			}
		})
		t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
		return cmd
	}
	waitDrainStalled := func() string {
		var drained string
		poll(t, 60*time.Second, "a drain stalled on the held pod", func(ctx context.Context) (bool, error) {
			nodes, err := groupNodes(t, ctx, "kd-a")
			if err != nil {
				return false, err
			}
			for _, n := range nodes {
				if hasToBeDeleted(&n) {
					drained = n.Name
				}
			}
			list, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			for _, p := range list.Items {
				if p.DeletionTimestamp != nil && p.Spec.NodeName == drained {
					return true, nil
				}
			}
			return false, err
		})
		return drained
	}

	// Killed: the taint is left behind, and the next tidal takes it off.
	proc := run()
	drained := waitDrainStalled()
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = proc.Process.Wait()
	n, _ := cluster(t).Client.CoreV1().Nodes().Get(ctx, drained, metav1.GetOptions{})
	if !hasToBeDeleted(n) {
		t.Fatal("the killed tidal left no taint: the test did not catch it mid-drain")
	}
	startTidal(t, "--scan-interval=1s", "--leader-elect=false", "--scale-down-enabled=false", "--local-node-groups="+groupsFile)
	poll(t, 15*time.Second, "the restarted tidal to remove the orphaned taint", func(ctx context.Context) (bool, error) {
		n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, drained, metav1.GetOptions{})
		return err == nil && !hasToBeDeleted(n), err
	})
	release()
	waitRunning(t, ns, "web", 2, 30*time.Second)
}

func TestScaleDownStoppedMidDrainUntaints(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "st-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: st-a, minSize: 0, maxSize: 5, initialSize: 2, zone: z, cpu: '4', memory: 16Gi}\n"
	preloadNodes(t, groups)
	createDeployment(t, spread(deployment(ns, "web", 2, "1500m", "1Gi")))
	ctx := context.Background()
	holdPods(t, ns, waitRunning(t, ns, "web", 2, 30*time.Second))
	tl := startTidal(t, append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups))...)
	var drained string
	poll(t, 60*time.Second, "a tainted node", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "st-a")
		for _, n := range nodes {
			if hasToBeDeleted(&n) {
				drained = n.Name
				return true, nil
			}
		}
		return false, err
	})
	time.Sleep(500 * time.Millisecond)
	if err := tl.Stop(t); err != nil {
		t.Fatalf("tidal's Run returned %v on shutdown", err)
	}
	n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, drained, metav1.GetOptions{})
	if err != nil || hasToBeDeleted(n) {
		t.Fatalf("after a graceful stop the drained node keeps its taint (err %v)", err)
	}
	if apierrors.IsNotFound(err) {
		t.Fatal("the node was deleted although its drain never finished")
	}
}

func resourceQ(s string) resource.Quantity { return resource.MustParse(s) }
