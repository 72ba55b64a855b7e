package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/deploy"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// TestChartFromClusterAutoscalerValues installs tidal from a Cluster
// Autoscaler user's values file (deploy/testdata) pointed at the AWS
// emulator: the rendered chart is applied to the API server, and tidal runs
// with the arguments of the Deployment the server stored, beside a running
// Cluster Autoscaler (its Lease held in kube-system) that is draining a node
// (its deletion taint on it). tidal says with an event on the Lease that it
// stands aside, and neither scales for pending pods nor touches the taint.
// When the Lease is released it says so again, takes the stale taint off,
// scales the auto-discovered ASG up, and writes the status ConfigMap the
// values name.
func TestChartFromClusterAutoscalerValues(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	e := startAWSEnv(t, 0, 6)
	ns := newNamespace(t)
	values := chartValues(t, map[string]any{"clusterName": e.cluster}, e.srv.Region())
	objs, err := deploy.RenderChart(filepath.Join(deploy.Dir(), "helm", "tidal"), "autoscaler", ns, values)
	if err != nil {
		t.Fatal(err)
	}
	kinds := applyChart(t, objs)
	for _, want := range []string{"ServiceMonitor", "PrometheusRule", "Service"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("the chart rendered no %s from the values (kinds %v)", want, kinds)
		}
	}
	lease := holdClusterAutoscalerLease(t)
	draining := drainingNode(t, "ca-draining-"+ns)
	tl := e.startTidal(t, storedArgs(t, ns, "cluster-autoscaler")...)

	waitLeaseEvent(t, lease, core.EventClusterAutoscalerActive)
	e.webPods(t, ns, 2, "1500m", "1Gi")
	waitUnschedulable(t, ns, "web", 2)
	// Two iterations that began after the scheduler gave up on the pods
	// decided nothing.
	start, err := iterationCount(tl)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "two more node loop iterations", func(context.Context) (bool, error) {
		n, err := iterationCount(tl)
		return n >= start+2, err
	})
	if g := e.group(t); g.DesiredCapacity != 0 {
		t.Fatalf("tidal scaled the ASG to %d while Cluster Autoscaler held its Lease", g.DesiredCapacity)
	}
	if n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, draining, metav1.GetOptions{}); err != nil || !hasTaintKey(n, scaledown.ToBeDeletedTaint) {
		t.Fatalf("the deletion taint of Cluster Autoscaler's drain was taken off while it held its Lease (err %v)", err)
	}

	// Cluster Autoscaler shuts down and releases its Lease, as client-go does.
	lease.Spec.HolderIdentity = ptr.To("")
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](1)
	if _, err := cluster(t).Client.CoordinationV1().Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLeaseEvent(t, lease, core.EventClusterAutoscalerGone)
	waitRunning(t, ns, "web", 2, 90*time.Second)
	if g := e.group(t); g.DesiredCapacity != 1 {
		t.Fatalf("desired capacity %d, want 1 node for 2 pods of 1.5 CPU", g.DesiredCapacity)
	}
	poll(t, 30*time.Second, "the stale deletion taint taken off", func(ctx context.Context) (bool, error) {
		n, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, draining, metav1.GetOptions{})
		return err == nil && !hasTaintKey(n, scaledown.ToBeDeletedTaint), err
	})
	poll(t, 30*time.Second, "the status ConfigMap cluster-autoscaler-status written", func(ctx context.Context) (bool, error) {
		cm, err := cluster(t).Client.CoreV1().ConfigMaps(ns).Get(ctx, "cluster-autoscaler-status", metav1.GetOptions{})
		return err == nil && cm.Data[core.StatusConfigMapKey] != "", err
	})
	e.checkHooks(t)
}

// TestChartFromClusterAutoscalersChartValues installs tidal from Cluster
// Autoscaler's chart's own values.yaml (deploy/testdata) with an EKS
// user's values on top (a Cluster Autoscaler image tag, the IRSA role),
// pointed at the AWS emulator: the API server stores tidal's image, and
// the Deployment and the ServiceAccount (with its IRSA annotation) under
// Cluster Autoscaler's chart's names; tidal run with the stored
// Deployment's arguments scales the discovered group up for pending pods.
func TestChartFromClusterAutoscalersChartValues(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	e := startAWSEnv(t, 0, 6)
	ns := newNamespace(t)
	const role = "arn:aws:iam::111122223333:role/cluster-autoscaler"
	values, err := deploy.CAChartValues(map[string]any{
		"autoDiscovery": map[string]any{"clusterName": e.cluster}, "awsRegion": e.srv.Region(),
		"image":     map[string]any{"tag": "v1.35.0"},
		"extraArgs": map[string]any{"scan-interval": "1s"},
		"rbac":      map[string]any{"serviceAccount": map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": role}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.RenderChart(filepath.Join(deploy.Dir(), "helm", "tidal"), "autoscaler", ns, values)
	if err != nil {
		t.Fatal(err)
	}
	applyChart(t, objs)
	const name = "autoscaler-aws-cluster-autoscaler"
	d, err := cluster(t).Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment under Cluster Autoscaler's chart's name: %v", err)
	}
	if pod := d.Spec.Template.Spec; pod.Containers[0].Image != "ghcr.io/tidal-autoscaler/tidal:v0.1.0" || pod.ServiceAccountName != name {
		t.Errorf("the stored Deployment runs %s as %s, want tidal's image as %s", pod.Containers[0].Image, pod.ServiceAccountName, name)
	}
	sa, err := cluster(t).Client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || sa.Annotations["eks.amazonaws.com/role-arn"] != role {
		t.Fatalf("the ServiceAccount %s with the IRSA role: %v (err %v)", name, sa, err)
	}
	e.startTidal(t, storedArgs(t, ns, name)...)
	e.webPods(t, ns, 2, "1500m", "1Gi")
	waitRunning(t, ns, "web", 2, 90*time.Second)
	if g := e.group(t); g.DesiredCapacity != 1 {
		t.Fatalf("desired capacity %d, want 1 node for 2 pods of 1.5 CPU", g.DesiredCapacity)
	}
}

// drainingNode makes a node of no group with Cluster Autoscaler's deletion
// taint, as a drain of Cluster Autoscaler leaves it, and deletes it when
// the test ends.
func drainingNode(t *testing.T, name string) string {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
		{Key: scaledown.ToBeDeletedTaint, Value: strconv.FormatInt(time.Now().Unix(), 10), Effect: corev1.TaintEffectNoSchedule}}}}
	if _, err := cluster(t).Client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster(t).Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
	})
	return name
}

// chartValues reads deploy/testdata's Cluster Autoscaler values and points
// them at the emulator: its cluster's discovery tags and region, and a
// short scan interval.
func chartValues(t *testing.T, autoDiscovery map[string]any, region string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(deploy.Dir(), "testdata", "cluster-autoscaler-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	values["autoDiscovery"] = autoDiscovery
	values["awsRegion"] = region
	values["extraArgs"].(map[string]any)["scan-interval"] = "1s"
	return values
}

// applyChart applies the chart's objects as `helm install` would, with the
// Deployment at 0 replicas (the test runs tidal itself), leaving out the
// Prometheus Operator's kinds, which this cluster does not serve. Its
// cluster-wide objects and those in kube-system go when the test ends. It
// returns the kinds rendered.
func applyChart(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var kinds []string
	var served []*unstructured.Unstructured
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		if o.GroupVersionKind().Group != "monitoring.coreos.com" {
			served = append(served, o)
		}
	}
	for _, a := range testenv.Apply(t, cluster(t), "helm", served) {
		o := a.Object
		if o.GetKind() == "CustomResourceDefinition" || o.GetNamespace() != "" && o.GetNamespace() != "kube-system" {
			continue
		}
		t.Cleanup(func() {
			if err := a.Resource.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		})
	}
	return kinds
}

// storedArgs are the arguments of the Deployment as the API server stored
// it, without --address (the test gives tidal a free one) and klog's flags
// (the test process's logging is the test's).
func storedArgs(t *testing.T, ns, name string) []string {
	t.Helper()
	d, err := cluster(t).Client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		flag, _, _ := strings.Cut(a, "=")
		if !slices.Contains([]string{"--address", "--logtostderr", "--stderrthreshold", "--v"}, flag) {
			args = append(args, a)
		}
	}
	return args
}

// holdClusterAutoscalerLease makes Cluster Autoscaler's Lease in
// kube-system, as a running one holds it (renewed now, for an hour), and
// deletes it when the test ends.
func holdClusterAutoscalerLease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cluster-autoscaler"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cluster-autoscaler-6d8f9-x2k4p"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now}}
	created, err := cluster(t).Client.CoordinationV1().Leases("kube-system").Create(context.Background(), lease, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := cluster(t).Client.CoordinationV1().Leases("kube-system").Delete(context.Background(), lease.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Lease: %v", err)
		}
	})
	return created
}

// waitLeaseEvent waits for an event of reason on the Lease.
func waitLeaseEvent(t *testing.T, lease *coordinationv1.Lease, reason string) {
	t.Helper()
	selector := fields.Set{"reason": reason, "involvedObject.name": lease.Name, "involvedObject.uid": string(lease.UID)}.AsSelector().String()
	poll(t, 30*time.Second, "a "+reason+" event on Lease "+lease.Name, func(ctx context.Context) (bool, error) {
		events, err := cluster(t).Client.CoreV1().Events(lease.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(events.Items) > 0, err
	})
}
