package podloop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/hpa/controller"
)

// A PodAutoscaler whose Deployment a HorizontalPodAutoscaler also targets
// is held: tidal reports AmbiguousOwner (condition and warning) and leaves
// the replicas alone under a load that asks for more, then drives the
// Deployment again once the HPA is deleted. (This cluster runs no HPA
// controller, so only tidal could move the replicas.)
func TestHPAAmbiguousOwnerHoldsTheTarget(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	api := hpaUseMetricsAPI(t, ns)
	hpaStartTidal(t, context.Background())
	hpaDeployment(t, ns, "web", 2)
	api.setCPU(ns, 100) // 2 pods of 100m at a 50% target: on target
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 8))
	hpaWaitCondition(t, ns, "web", autoscalingv2.ScalingActive, corev1.ConditionTrue, "")

	pa := hpaCPUAutoscaler(ns, "web", 50, 1, 8)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-hpa"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: pa.Spec.ScaleTargetRef,
			MinReplicas: pa.Spec.MinReplicas, MaxReplicas: pa.Spec.MaxReplicas, Metrics: []autoscalingv2.MetricSpec{pa.Spec.Metrics[0].MetricSpec}}}
	hpas := cluster(t).Client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	if _, err := hpas.Create(context.Background(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create HorizontalPodAutoscaler: %v", err)
	}
	msg := "Deployment/" + ns + "/web is also the scale target of HorizontalPodAutoscaler/web-hpa"
	hpaWaitCondition(t, ns, "web", autoscalingv2.ScalingActive, corev1.ConditionFalse, controller.ReasonAmbiguousOwner)
	if c := hpaCondition(hpaGetPA(t, ns, "web"), autoscalingv2.ScalingActive); !strings.Contains(c.Message, msg) {
		t.Fatalf("ScalingActive message %q, want it to contain %q", c.Message, msg)
	}
	if e := hpaWaitEvent(t, ns, controller.ReasonAmbiguousOwner, msg); e.Type != corev1.EventTypeWarning {
		t.Fatalf("event %s %s: want a Warning", e.Type, e.Message)
	}

	api.setCPU(ns, 250) // 5 replicas' worth, were tidal to act
	hpaHoldReplicas(t, ns, "web", 2, 4*time.Second)

	if err := hpas.Delete(context.Background(), "web-hpa", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete HorizontalPodAutoscaler: %v", err)
	}
	hpaWaitReplicas(t, ns, "web", 5, 60*time.Second)
	if c := hpaCondition(hpaGetPA(t, ns, "web"), autoscalingv2.ScalingActive); c.Reason == controller.ReasonAmbiguousOwner {
		t.Fatalf("ScalingActive still %+v after the HPA was deleted", c)
	}
}

// hpaWaitCondition waits until the PodAutoscaler's condition has the status
// and, unless reason is empty, the reason; on a timeout the last condition
// seen is the error.
func hpaWaitCondition(t *testing.T, ns, name string, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	poll(t, 30*time.Second, fmt.Sprintf("%s=%s %s", typ, status, reason), func(ctx context.Context) (bool, error) {
		pa, err := hpaPAClient(t).PodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if c := hpaCondition(pa, typ); c.Status != status || (reason != "" && c.Reason != reason) {
			return false, fmt.Errorf("%s is %s %s: %s", typ, c.Status, c.Reason, c.Message)
		}
		return true, nil
	})
}
