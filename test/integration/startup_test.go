package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// holdLabel marks the nodes whose not-ready taint holdNotReadyTaint keeps;
// releaseAnnotation on a node, set in the update that takes the taint off,
// lets that update through.
const (
	holdLabel         = "test.tidal.dev/hold-not-ready"
	releaseAnnotation = "test.tidal.dev/release"
)

// holdNotReadyTaint makes the API server refuse any update that takes the
// node.kubernetes.io/not-ready:NoSchedule taint off a node labelled
// holdLabel=true, unless the update also sets releaseAnnotation: the node
// lifecycle controller then cannot remove the taint it put on a new node, as
// happens on a busy cluster, and the node stays Ready yet tainted until the
// test releases it. The hold is in force when the function returns.
func holdNotReadyTaint(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	name := "hold-not-ready-" + rand.String(5)
	keepsTaint := fmt.Sprintf(`object.spec.?taints.orValue([]).exists(t, t.key == %[1]q && t.effect == "NoSchedule") ||
!oldObject.spec.?taints.orValue([]).exists(t, t.key == %[1]q && t.effect == "NoSchedule") ||
object.metadata.?annotations[?%[2]q].orValue("") == "true"`, corev1.TaintNodeNotReady, releaseAnnotation)
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{holdLabel: "true"}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"}},
				}}},
			},
			Validations: []admissionv1.Validation{{Expression: keepsTaint, Message: "the test holds the not-ready taint"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	api := cluster(t).Client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the hold policy: %v", err)
	}
	t.Cleanup(func() { _ = api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}) })
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the hold policy binding: %v", err)
	}
	t.Cleanup(func() { _ = api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}) })
	waitHoldInForce(t, name)
}

// waitHoldInForce waits until the API server enforces the hold (it loads
// policies asynchronously): a probe node's taint cannot be taken off.
func waitHoldInForce(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	probe := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-probe", Labels: map[string]string{holdLabel: "true"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}},
	}
	if _, err := cluster(t).Client.CoreV1().Nodes().Create(ctx, probe.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the probe node: %v", err)
	}
	defer func() {
		if err := cluster(t).Client.CoreV1().Nodes().Delete(ctx, probe.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete the probe node: %v", err)
		}
	}()
	nodes := cluster(t).Client.CoreV1().Nodes()
	poll(t, 30*time.Second, "the not-ready hold to be enforced", func(ctx context.Context) (bool, error) {
		n, err := nodes.Get(ctx, probe.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !hasNotReadyTaint(n) {
			// The node lifecycle controller took it off before the hold.
			n.Spec.Taints = append(n.Spec.Taints, probe.Spec.Taints...)
			_, err := nodes.Update(ctx, n, metav1.UpdateOptions{})
			return false, err
		}
		n.Spec.Taints = nil
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), nil
	})
}

// removeTaint takes the taint with key off the node, as whatever put it
// there would once the node is set up; with releaseAnnotation for a held
// not-ready taint.
func removeTaint(t *testing.T, name, key string) {
	t.Helper()
	updateNode(t, name, func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
		metav1.SetMetaDataAnnotation(&n.ObjectMeta, releaseAnnotation, "true")
	})
}

func hasNotReadyTaint(n *corev1.Node) bool { return hasTaintKey(n, corev1.TaintNodeNotReady) }

func hasTaintKey(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// scaleUpPastTaint runs 6 pods of 1 CPU in a group of 4-CPU nodes whose
// new nodes report Ready while they still carry the taint key, until the
// test takes it off after several node-loop iterations: the node loop must
// count those nodes as coming and ask for the 2 nodes the pods need once.
// The pods all exist before tidal starts (the ReplicaSet creates them in
// waves), so one decision sees them all.
func scaleUpPastTaint(t *testing.T, group, key string, flags ...string) {
	t.Helper()
	ns := newNamespace(t)
	createDeployment(t, deployment(ns, "web", 6, "1", "1Gi"))
	waitCreated(t, ns, "web", 6)
	tl := startTidal(t, append(scaleUpFlags, flags...)...)
	var held []string
	poll(t, 60*time.Second, fmt.Sprintf("2 %s nodes Ready with taint %s", group, key), func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, group)
		held = held[:0]
		for _, n := range nodes {
			if isReady(&n) && hasTaintKey(&n, key) {
				held = append(held, n.Name)
			}
		}
		return len(held) >= 2, err
	})
	// Iterations that see the nodes Ready, tainted, and the pods pending.
	seen, err := iterationCount(tl)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "3 more node-loop iterations", func(context.Context) (bool, error) {
		n, err := iterationCount(tl)
		return n >= seen+3, err
	})
	for _, name := range held {
		removeTaint(t, name, key)
	}
	waitRunning(t, ns, "web", 6, 60*time.Second)
	if n := nodeCount(t, group); n != 2 {
		t.Fatalf("%s has %d nodes, want 2: nodes Ready but tainted %s were taken for missing room, not for nodes coming", group, n, key)
	}
	if n, err := metricValue(tl.Address, fmt.Sprintf(`tidal_scale_ups_total{node_group=%q}`, group)); err != nil || n != 1 {
		t.Fatalf("%s grew in %v decisions (err %v), want 1", group, n, err)
	}
}

// iterations reads how many node-loop iterations tidal has finished.
func iterationCount(tl *tidal) (float64, error) {
	return metricValue(tl.Address, `tidal_function_duration_seconds_count{function="main"}`)
}

// TestScaleUpCountsReadyNodesWithTheNotReadyTaintAsUpcoming: a new node
// reports Ready before the node lifecycle controller takes off the
// not-ready taint the API server put on it; on a busy cluster that takes
// seconds. Meanwhile the pods cannot land there, yet the node is coming.
func TestScaleUpCountsReadyNodesWithTheNotReadyTaintAsUpcoming(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "nr-")
	holdNotReadyTaint(t)
	groups := writeGroups(t, fmt.Sprintf(`
nodeGroups:
- {name: nr-g, minSize: 0, maxSize: 6, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 200ms, labels: {%q: "true"}}
`, holdLabel))
	scaleUpPastTaint(t, "nr-g", corev1.TaintNodeNotReady, "--local-node-groups="+groups)
}

// TestScaleUpThroughAStartupTaint: a group's nodes start with a taint that
// a setup agent removes, named with Cluster Autoscaler's startup-taint
// prefix. Templates leave it out, so the group can grow for pods that do
// not tolerate it, and its nodes count as coming while they carry it.
func TestScaleUpThroughAStartupTaint(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "st-")
	const key = "startup-taint.cluster-autoscaler.kubernetes.io/driver-installing"
	scaleUpPastTaint(t, "st-g", key, "--local-node-groups="+writeStartupTaintedGroup(t, "st-g", key))
}

// writeStartupTaintedGroup writes a local-cloud group of 4-CPU nodes that
// start with the taint key (value true, NoSchedule), and returns the file.
func writeStartupTaintedGroup(t *testing.T, name, key string) string {
	return writeGroups(t, fmt.Sprintf(`
nodeGroups:
- {name: %s, minSize: 0, maxSize: 6, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 200ms,
   taints: [{key: %q, value: "true", effect: NoSchedule}]}
`, name, key))
}
