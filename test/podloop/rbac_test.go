package podloop

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/deploy"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// The least-privilege test: deploy/'s kustomize base is applied to the
// cluster (which authorizes with RBAC), tidal runs with a token of the
// base's ServiceAccount through the whole of its work (node scale-up and
// scale-down with evictions and taints, the pod loop on PodAutoscalers from
// the three metrics APIs, leader election, status and events, then the pod
// loop on HorizontalPodAutoscalers), and the API server's audit log of that
// ServiceAccount is then checked against the roles (rbac_replay_test.go).

const tidalUser = "system:serviceaccount:kube-system:tidal"

// rbacAuditPolicy logs tidal's ServiceAccount's requests, once each, with
// the authorization decision, and nothing else.
const rbacAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users: ["` + tidalUser + `"]
- level: None
`

func TestLeastPrivilege(t *testing.T) {
	// Serial: it sets a feature gate of client-go, which is the process's.
	// client-go streams an informer's initial list through a watch where the
	// API server can (watch-list); tidal also runs against servers that
	// cannot, where informers list. The test makes them list, so that the
	// list permissions are proven needed too.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	hpaInstallCRD(t)
	forgetTidalState(t)
	objs := applyBase(t)
	kubeconfig := serviceAccountKubeconfig(t, "kube-system", "tidal")
	from := auditSize(t)
	t.Cleanup(func() {
		if t.Failed() {
			for _, ev := range readAudit(t, from, tidalUser) {
				if ev.Annotations["authorization.k8s.io/decision"] != "allow" {
					t.Logf("forbidden: %s %s", ev.Verb, ev.RequestURI)
				}
			}
		}
	})
	rbacNodesAndPodAutoscaler(t, kubeconfig)
	rbacHPAObjects(t, kubeconfig)
	rbacNomination(t)
	requests := readAudit(t, from, tidalUser)
	checkLeastPrivilege(t, objs, requests)
}

// applyBase applies deploy/base as `kubectl apply --server-side -k` would,
// with tidal's own Deployment at 0 replicas (the test runs tidal itself),
// and returns the objects.
func applyBase(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := deploy.Kustomize(filepath.Join(deploy.Dir(), "base"))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Apply(t, cluster(t), "tidal-test", objs)
	return objs
}

// forgetTidalState deletes what earlier runs of tidal left in kube-system
// (the leader Lease, the status ConfigMap), so that this run starts as a
// fresh installation: the Lease made by tidal, the ConfigMap by deploy/.
func forgetTidalState(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	err := cluster(t).Client.CoordinationV1().Leases("kube-system").Delete(ctx, "tidal", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	err = cluster(t).Client.CoreV1().ConfigMaps("kube-system").Delete(ctx, "tidal-status", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates with a
// bound token of the ServiceAccount, as a pod of it would.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	tr, err := cluster(t).Client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	cfg := rest.AnonymousClientConfig(cluster(t).Config)
	cfg.BearerToken = tr.Status.Token
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// rbacNodesAndPodAutoscaler is the node loop and the pod loop together, on a
// PodAutoscaler reading all three metrics APIs: a step in load needs two
// more nodes; when it falls back the added nodes are drained (evicting the
// replicas kept on them) and removed, around pods a PDB protects. A pod no
// node group can run keeps getting the same event (a patch).
func rbacNodesAndPodAutoscaler(t *testing.T, kubeconfig string) {
	ctx := context.Background()
	const group = "rbac-pool"
	ns, api, tl := rbacStart(t, kubeconfig, group, "maxSize: 4, initialSize: 1, cpu: '4', memory: 16Gi, provisioningDelay: 1s",
		"--hpa-sync-period=2s", "--hpa-downscale-stabilization=3s",
		"--scale-down-unneeded-time=2s", "--scale-down-delay-after-add=0s", "--scale-down-delay-after-delete=0s",
		"--record-duplicated-events=true")
	waitFirstNodeReady(t, group, 60*time.Second)

	guardedAndWeb(t, ns, group)
	guardedUIDs := podUIDs(t, ns, "guarded")

	// A pod too big for any node: tidal says so on every scan (the same
	// event again is a patch of its count).
	huge := deployment(ns, "huge", 1, "64", "1Gi").Spec.Template
	huge.Name = "huge"
	huge.Namespace = ns
	create(t, cluster(t).Client.CoreV1().Pods(ns).Create, &corev1.Pod{ObjectMeta: huge.ObjectMeta, Spec: huge.Spec})
	poll(t, 30*time.Second, "a NotTriggerScaleUp event seen twice", func(context.Context) (bool, error) {
		for _, e := range hpaEvents(t, ns, "NotTriggerScaleUp") {
			if e.InvolvedObject.Name == "huge" && e.Count >= 2 {
				return true, nil
			}
		}
		return false, nil
	})
	if err := cluster(t).Client.CoreV1().Pods(ns).Delete(ctx, "huge", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}

	api.setPodsMetric(ns, "requests", 20)
	api.setCPU(ns, 200)
	api.setExternal(ns, "queue", 1)
	hpaCreatePA(t, rbacAutoscaler(ns))
	poll(t, 30*time.Second, "the PodAutoscaler's status", func(context.Context) (bool, error) {
		pa := hpaGetPA(t, ns, "web")
		return pa.Status.LastScaleTime == nil && len(pa.Status.CurrentMetrics) == 3, nil
	})

	// The step: 8 replicas of 0.9 CPU and the guarded pods need two more nodes.
	api.setPodsMetric(ns, "requests", 80)
	hpaWaitReplicas(t, ns, "web", 8, 30*time.Second)
	poll(t, 60*time.Second, "every new replica Ready on three nodes", func(ctx context.Context) (bool, error) {
		d, err := cluster(t).Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == 8 && nodeCountOf(t, group) == 3, err
	})
	keepOnAddedNodes(t, ns, "web", group, 2)

	// The fall: two replicas stay, on added nodes, which are drained.
	api.setPodsMetric(ns, "requests", 20)
	hpaWaitReplicas(t, ns, "web", 2, 60*time.Second)
	poll(t, 90*time.Second, "the added nodes removed", func(ctx context.Context) (bool, error) {
		n, err := groupNodes(t, ctx, group)
		return len(n) == 1, err
	})
	hpaWaitRunning(t, ns, "web", 2)
	if got := podUIDs(t, ns, "guarded"); got != guardedUIDs {
		t.Fatalf("PDB-protected pods were replaced: %s, were %s", got, guardedUIDs)
	}
	if err := tl.Stop(t); err != nil {
		t.Fatalf("tidal stopped with %v", err)
	}
}

// rbacStart runs tidal with the kubeconfig (the ServiceAccount's) on a node
// group of its own of the given shape, its local cloud acting with the
// admin client (the cloud's machines are not the cluster's business), and
// returns the test's namespace and metrics.
func rbacStart(t *testing.T, kubeconfig, group, shape string, args ...string) (string, *hpaMetricsAPI, *tidal) {
	t.Helper()
	deleteNodesOnCleanup(t, group+"-")
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	groups := "nodeGroups:\n- {name: " + group + ", minSize: 1, zone: z, " + shape + "}\n"
	runCtx := testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity)
	tl := testenv.StartTidalWith(runCtx, t, kubeconfig, []app.Option{app.WithLocalCloudClient(cluster(t).Client)}, append([]string{"--local-node-groups=" + writeGroups(t, groups),
		"--scan-interval=2s"}, args...)...)
	return ns, api, tl
}

// rbacAutoscaler scales web on a Pods metric (custom.metrics.k8s.io), 10
// per replica, and also reads cpu (metrics.k8s.io) and an External metric
// (external.metrics.k8s.io), set so that they never ask for more.
func rbacAutoscaler(ns string) *v1alpha1.PodAutoscaler {
	pa := coopAutoscaler(ns)
	pa.Spec.Metrics = append(pa.Spec.Metrics,
		v1alpha1.MetricSpec{MetricSpec: autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](90)}}}},
		v1alpha1.MetricSpec{MetricSpec: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(100, resource.DecimalSI)}}}})
	return pa
}

// keepOnAddedNodes gives n of app's pods, each on a different node other
// than the group's first, a high pod-deletion-cost, so that the ReplicaSet
// keeps them when it scales down and the node loop has to evict them to
// remove their (then underused) nodes.
func keepOnAddedNodes(t *testing.T, ns, app, group string, n int) {
	t.Helper()
	ctx := context.Background()
	nodes, err := groupNodes(t, ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	first := nodes[0]
	for _, node := range nodes[1:] {
		if node.CreationTimestamp.Before(&first.CreationTimestamp) {
			first = node
		}
	}
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	used := map[string]bool{first.Name: true}
	for _, p := range pods.Items {
		if kept == n || used[p.Spec.NodeName] {
			continue
		}
		used[p.Spec.NodeName] = true
		patch := []byte(`{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"1000"}}}`)
		if _, err := cluster(t).Client.CoreV1().Pods(ns).Patch(ctx, p.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		kept++
	}
	if kept != n {
		t.Fatalf("only %d of %s's pods are on added nodes, want %d", kept, app, n)
	}
}

// rbacHPAObjects is the pod loop on an autoscaling/v2 HorizontalPodAutoscaler
// (--hpa-objects): status and the history annotation are written.
func rbacHPAObjects(t *testing.T, kubeconfig string) {
	const group = "rbac-hpa"
	ns, api, tl := rbacStart(t, kubeconfig, group, "maxSize: 1, cpu: '8', memory: 32Gi, provisioningDelay: 200ms",
		"--hpa-objects=true", "--hpa-sync-period=1s")
	worker := deployment(ns, "worker", 1, "100m", "64Mi")
	worker.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: group}
	create(t, cluster(t).Client.AppsV1().Deployments(ns).Create, worker)
	api.setExternal(ns, "queue", 30)
	hpa := hpaQueueAutoscaler(ns, "worker")
	create(t, cluster(t).Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create, hpa)
	hpaWaitReplicas(t, ns, "worker", 3, 60*time.Second)
	poll(t, 30*time.Second, "the HPA's status and history", func(ctx context.Context) (bool, error) {
		h, err := cluster(t).Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "worker", metav1.GetOptions{})
		return err == nil && h.Status.DesiredReplicas == 3 && h.Annotations[controller.HistoryAnnotation] != "", err
	})
	if err := tl.Stop(t); err != nil {
		t.Fatalf("tidal stopped with %v", err)
	}
}

// rbacNomination has tidal's ServiceAccount set and clear a pending pod's
// nominated node with the node loop's own write: whether the scenario's
// scale-up nominates depends on whether the scheduler binds its pods before
// the loop sees their node ready, so the write is made here for certain.
func rbacNomination(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := newNamespace(t)
	pod, err := cluster(t).Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waiting"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			NodeSelector: map[string]string{"example.com/none": "x"}, AutomountServiceAccountToken: ptr.To(false)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa := serviceAccountClient(t, "kube-system", "tidal")
	for _, node := range []string{"planned", ""} {
		if err := act.NominateWith(ctx, sa, nominate.Change{UID: pod.UID, Namespace: ns, Name: pod.Name, Node: node}); err != nil {
			t.Fatalf("tidal's nomination to %q: %v", node, err)
		}
	}
}
