package podloop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// hpaCRDPath is the generated PodAutoscaler CRD.
var hpaCRDPath = filepath.Join("..", "..", "deploy", "crd", "autoscaling.tidal.dev_podautoscalers.yaml")

// hpaInstallCRD applies deploy/crd to the test's cluster (where it stays
// until the test ends) and waits until the API server serves
// PodAutoscalers.
func hpaInstallCRD(t *testing.T) {
	t.Helper()
	if err := hpaApplyCRD(cluster(t)); err != nil {
		t.Fatalf("install the PodAutoscaler CRD: %v", err)
	}
	poll(t, 30*time.Second, "PodAutoscalers to be served", func(ctx context.Context) (bool, error) {
		_, err := hpaPAClient(t).PodAutoscalers("default").List(ctx, metav1.ListOptions{})
		return err == nil, err
	})
}

func hpaApplyCRD(c *localcluster.Cluster) error {
	raw, err := os.ReadFile(hpaCRDPath)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return fmt.Errorf("%s: %w", hpaCRDPath, err)
	}
	client, err := apiextensions.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	_, err = client.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), crd, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func hpaPAClient(t *testing.T) *v1alpha1.Client {
	t.Helper()
	c, err := v1alpha1.NewForConfig(cluster(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hpaNamespace makes the test's namespace. The hpa- nodes are removed
// after the namespace is gone: pods on a deleted node would stay
// Terminating and hold the namespace.
func hpaNamespace(t *testing.T) string {
	t.Helper()
	deleteNodesOnCleanup(t, "hpa-")
	return newNamespace(t)
}

// hpaGroups is the node group the pod-loop tests run their pods on: one
// large node holds every replica they ask for.
const hpaGroups = `
nodeGroups:
- {name: hpa-a, minSize: 1, maxSize: 2, zone: zone-a, instanceType: t-32, cpu: "32", memory: 128Gi, pods: 200, provisioningDelay: 200ms}
`

// hpaStartTidal runs tidal with the pod loop configured for fast tests (a
// 1s sync period) plus args, on its own node group; ctx carries values for
// Run (a simulated metric source). It returns once the group's node is
// Ready.
func hpaStartTidal(t *testing.T, ctx context.Context, args ...string) *tidal {
	t.Helper()
	return hpaStartTidalWith(t, ctx, nil, args...)
}

// hpaStartTidalWith is hpaStartTidal with options for Run.
func hpaStartTidalWith(t *testing.T, ctx context.Context, options []app.Option, args ...string) *tidal {
	t.Helper()
	tl := testenv.StartTidalWith(ctx, t, cluster(t).KubeconfigPath, options, append([]string{"--leader-elect=false",
		"--local-node-groups=" + writeGroups(t, hpaGroups), "--scan-interval=1s", "--hpa-sync-period=1s"}, args...)...)
	poll(t, 30*time.Second, "the hpa-a node Ready", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "hpa-a")
		return len(nodes) >= 1 && isReady(&nodes[0]), err
	})
	return tl
}

// hpaDeployment creates a Deployment of pods requesting 100m cpu and waits
// until they run.
func hpaDeployment(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	if _, err := cluster(t).Client.AppsV1().Deployments(ns).Create(context.Background(), deployment(ns, name, replicas, "100m", "64Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	hpaWaitRunning(t, ns, name, replicas)
}

// hpaWaitRunning waits until the Deployment has exactly n Running pods.
func hpaWaitRunning(t *testing.T, ns, name string, n int32) {
	t.Helper()
	poll(t, 60*time.Second, fmt.Sprintf("%d running pods of %s", n, name), func(ctx context.Context) (bool, error) {
		pods, err := hpaRunningPods(ctx, cluster(t).Client, ns, "app="+name)
		return int32(len(pods)) == n, err
	})
}

// hpaReplicas reads a Deployment's spec.replicas.
func hpaReplicas(t testing.TB, ctx context.Context, ns, name string) (int32, error) {
	d, err := cluster(t).Client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return ptr.Deref(d.Spec.Replicas, 1), nil
}

// hpaWaitReplicas waits until the Deployment's spec.replicas is n.
func hpaWaitReplicas(t *testing.T, ns, name string, n int32, timeout time.Duration) {
	t.Helper()
	poll(t, timeout, fmt.Sprintf("%s/%s scaled to %d", ns, name, n), func(ctx context.Context) (bool, error) {
		r, err := hpaReplicas(t, ctx, ns, name)
		return r == n, err
	})
}

// hpaHoldReplicas fails the test if the Deployment's replicas leave n within d.
func hpaHoldReplicas(t *testing.T, ns, name string, n int32, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		r, err := hpaReplicas(t, ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if r != n {
			t.Fatalf("%s/%s went to %d replicas, want %d held", ns, name, r, n)
		}
	}
}

// hpaCPUAutoscaler is a PodAutoscaler of a Deployment on cpu utilization.
func hpaCPUAutoscaler(ns, name string, target, minR, maxR int32) *v1alpha1.PodAutoscaler {
	return &v1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To(minR), MaxReplicas: maxR,
			Metrics: []v1alpha1.MetricSpec{{MetricSpec: autoscalingv2.MetricSpec{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
					Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)}},
			}}},
		},
	}
}

// hpaPodsAutoscaler is a PodAutoscaler of a Deployment on a Pods metric,
// perPod per replica, from 1 to maxR replicas with the given behavior.
func hpaPodsAutoscaler(ns, name, metric string, perPod int64, maxR int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior) *v1alpha1.PodAutoscaler {
	return &v1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: maxR,
			Metrics: []v1alpha1.MetricSpec{{MetricSpec: autoscalingv2.MetricSpec{
				Type: autoscalingv2.PodsMetricSourceType,
				Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: metric},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(perPod, resource.DecimalSI)}},
			}}},
			Behavior: v1alpha1.BehaviorFromHPA(b),
		},
	}
}

// hpaQueueAutoscaler is an autoscaling/v2 HorizontalPodAutoscaler of a
// Deployment on the External metric queue, 10 per replica, 1 to 5 replicas.
func hpaQueueAutoscaler(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)},
			}}},
		},
	}
}

func hpaCreatePA(t *testing.T, pa *v1alpha1.PodAutoscaler) {
	t.Helper()
	if _, err := hpaPAClient(t).PodAutoscalers(pa.Namespace).Create(context.Background(), pa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PodAutoscaler: %v", err)
	}
}

func hpaGetPA(t *testing.T, ns, name string) *v1alpha1.PodAutoscaler {
	t.Helper()
	pa, err := hpaPAClient(t).PodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pa
}

// hpaCondition returns a PodAutoscaler's status condition.
func hpaCondition(pa *v1alpha1.PodAutoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range pa.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

// hpaEvents lists the events of one reason in a namespace.
func hpaEvents(t *testing.T, ns, reason string) []corev1.Event {
	t.Helper()
	list, err := cluster(t).Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", reason).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// hpaWaitEvent waits for an event of the reason whose message contains text.
func hpaWaitEvent(t *testing.T, ns, reason, text string) corev1.Event {
	t.Helper()
	var found corev1.Event
	poll(t, 30*time.Second, fmt.Sprintf("a %s event containing %q", reason, text), func(ctx context.Context) (bool, error) {
		for _, e := range hpaEvents(t, ns, reason) {
			if strings.Contains(e.Message, text) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// hpaReplicaTrace records every distinct spec.replicas value of a Deployment
// until stopped.
type hpaReplicaTrace struct {
	mu     sync.Mutex
	values []int32
	stop   chan struct{}
	done   chan struct{}
}

func hpaTraceReplicas(t testing.TB, ns, name string) *hpaReplicaTrace {
	tr := &hpaReplicaTrace{stop: make(chan struct{}), done: make(chan struct{})}
	read := func() {
		if r, err := hpaReplicas(t, context.Background(), ns, name); err == nil {
			tr.mu.Lock()
			if len(tr.values) == 0 || tr.values[len(tr.values)-1] != r {
				tr.values = append(tr.values, r)
			}
			tr.mu.Unlock()
		}
	}
	go func() {
		defer close(tr.done)
		for {
			read()
			select {
			case <-tr.stop:
				// One last read: the caller saw the final value, which
				// may have come after this goroutine's previous read.
				read()
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return tr
}

func (tr *hpaReplicaTrace) finish() []int32 {
	close(tr.stop)
	<-tr.done
	return tr.values
}
