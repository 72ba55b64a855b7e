package podloop

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scalein"
)

// policyName is deploy/base's ValidatingAdmissionPolicy on tidal's pod
// writes.
const policyName = "tidal-pod-writes"

// tidal's ServiceAccount, as deploy/base installs it (RBAC: pods patch;
// the policy tidal-pod-writes), against the real API server: it sets and
// clears pod-deletion-cost with tidal's own patch, and every other change
// to a pod it tries is refused by the policy, the pod left as it was. The
// same patches by another user pass: the policy confines tidal only. Before
// the policy, tidal's token could patch any pod's image.
func TestPodWritesConfinedToDeletionCost(t *testing.T) {
	parallel(t)
	applyBase(t)
	sa := serviceAccountClient(t, "kube-system", "tidal")
	ns := newNamespace(t)
	ctx := context.Background()
	pods := cluster(t).Client.CoreV1().Pods(ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			AutomountServiceAccountToken: ptr.To(false)},
	}
	poll(t, 30*time.Second, "the pod to be created", func(ctx context.Context) (bool, error) {
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	image := `{"spec":{"containers":[{"name":"app","image":"registry.example/evil:1"}]}}`
	poll(t, 60*time.Second, "the policy to refuse tidal's image patch", func(ctx context.Context) (bool, error) {
		_, err := sa.CoreV1().Pods(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(image), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), policyName), nil
	})

	set, err := scalein.MergePatch(scalein.Patch{Pod: "web", Cost: "-100"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.CoreV1().Pods(ns).Patch(ctx, "web", types.MergePatchType, set, metav1.PatchOptions{}); err != nil {
		t.Fatalf("tidal's deletion-cost patch %s refused: %v", set, err)
	}
	got, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[scalein.CostAnnotation] != "-100" || got.Annotations[scalein.OwnedAnnotation] != "true" {
		t.Fatalf("annotations after tidal's patch: %v", got.Annotations)
	}

	// What a pod update may change (the API server refuses the rest
	// before any policy runs).
	for _, tc := range []struct {
		what  string
		typ   types.PatchType
		patch string
	}{
		{"the image", types.StrategicMergePatchType, image},
		{"activeDeadlineSeconds", types.StrategicMergePatchType, `{"spec":{"activeDeadlineSeconds":1}}`},
		{"an added toleration", types.JSONPatchType, `[{"op":"add","path":"/spec/tolerations/-","value":{"operator":"Exists"}}]`},
		{"a label", types.StrategicMergePatchType, `{"metadata":{"labels":{"app":"other"}}}`},
		{"an added label", types.StrategicMergePatchType, `{"metadata":{"labels":{"extra":"x"}}}`},
		{"a removed label", types.MergePatchType, `{"metadata":{"labels":{"app":null}}}`},
		{"another annotation", types.MergePatchType, `{"metadata":{"annotations":{"team":"b"}}}`},
		{"an added annotation", types.MergePatchType, `{"metadata":{"annotations":{"example.com/x":"y"}}}`},
		{"a removed annotation", types.MergePatchType, `{"metadata":{"annotations":{"team":null}}}`},
		{"the cost with a label", types.MergePatchType, `{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"5"},"labels":{"app":"other"}}}`},
		{"a finalizer", types.MergePatchType, `{"metadata":{"finalizers":["example.com/hold"]}}`},
		{"an owner", types.MergePatchType, `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"x","uid":"00000000-0000-0000-0000-000000000001"}]}}`},
	} {
		_, err := sa.CoreV1().Pods(ns).Patch(ctx, "web", tc.typ, []byte(tc.patch), metav1.PatchOptions{})
		if err == nil || !strings.Contains(err.Error(), policyName) {
			t.Errorf("tidal's patch of %s: %v, want a refusal by %s", tc.what, err, policyName)
		}
	}
	after, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != got.ResourceVersion {
		t.Errorf("the pod changed under refused patches: %+v", after)
	}

	clear, err := scalein.MergePatch(scalein.Patch{Pod: "web"}, after.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.CoreV1().Pods(ns).Patch(ctx, "web", types.MergePatchType, clear, metav1.PatchOptions{}); err != nil {
		t.Fatalf("tidal's patch clearing the cost %s refused: %v", clear, err)
	}
	if _, err := pods.Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"app":"other"}}}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("another user's label patch refused: %v", err)
	}
	nominations(ctx, t, sa, pods, ns)
}

// nominations: through pods/status, tidal's ServiceAccount sets and clears
// status.nominatedNodeName with the node loop's own patch, and any other
// change of the status it tries is refused by the policy.
func nominations(ctx context.Context, t *testing.T, sa kubernetes.Interface, pods typedcorev1.PodInterface, ns string) {
	t.Helper()
	pod, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"planned-1", ""} {
		if failed := act.NominateWith(ctx, sa, nominate.Change{UID: pod.UID, Namespace: ns, Name: "web", Node: node}); failed != nil {
			t.Fatalf("tidal's nomination to %q refused: %v", node, failed)
		}
		got, err := pods.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.NominatedNodeName != node {
			t.Fatalf("nominated node %q after tidal's patch, want %q", got.Status.NominatedNodeName, node)
		}
	}
	before, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, patch string }{
		{"the phase", `{"status":{"phase":"Failed"}}`},
		{"the nomination with the phase", `{"status":{"nominatedNodeName":"n","phase":"Failed"}}`},
		{"a condition", `{"status":{"conditions":[{"type":"PodScheduled","status":"True"}]}}`},
		{"the pod IP", `{"status":{"podIP":"10.0.0.9","podIPs":[{"ip":"10.0.0.9"}]}}`},
		{"the message", `{"status":{"message":"x"}}`},
	} {
		_, err := sa.CoreV1().Pods(ns).Patch(ctx, "web", types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{}, "status")
		if err == nil || !strings.Contains(err.Error(), policyName) {
			t.Errorf("tidal's status patch of %s: %v, want a refusal by %s", tc.what, err, policyName)
		}
	}
	if after, err := pods.Get(ctx, "web", metav1.GetOptions{}); err != nil || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("the pod changed under refused status patches (%v): %+v", err, after.Status)
	}
}

// serviceAccountClient is a client that authenticates with a bound token of
// the ServiceAccount.
func serviceAccountClient(t *testing.T, ns, name string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", serviceAccountKubeconfig(t, ns, name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
