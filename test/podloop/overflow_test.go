package podloop

import (
	"context"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// PodAutoscalers stored while the CRD took any string of digits and units
// as a schedule's duration or lead time, one whose duration and one whose
// lead time overflow Go's time.Duration, beside two good ones: the good
// ones scale, and each bad one is reported on itself (ScalingActive False,
// reason InvalidSpec, a warning event naming the field). Before tidal
// decoded each object apart, every list of PodAutoscalers failed
// ("time: invalid duration") and no autoscaler scaled: this test then
// fails waiting for web's replicas.
func TestOverflowingDurationsDoNotStopThePodLoop(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	bad := []struct{ name, schedule, field string }{
		{"long-window", `{name: peak, start: "0 8 * * *", duration: "99999999999h", minReplicas: 2}`, "spec.schedules[0].duration"},
		{"long-lead", `{name: peak, start: "0 8 * * *", duration: "1h", leadTime: "2562048h", minReplicas: 2}`, "spec.schedules[0].leadTime"},
	}
	withRelaxedCRD(t, func(s *apiextensionsv1.JSONSchemaProps) {
		if s.Pattern == v1alpha1.DurationPattern { // as before tidal bounded durations
			s.Pattern, s.MaxLength, s.XValidations = `^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`, nil, nil
		}
	}, func() {
		for _, b := range bad {
			obj := specObject(t, paResource, v1alpha1.Kind, crdBase+cpuMetric+"schedules: ["+b.schedule+"]")
			obj.SetName(b.name)
			poll(t, 30*time.Second, "the CRD without duration bounds to take effect", func(ctx context.Context) (bool, error) {
				_, err := dyn.Resource(paResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
				return err == nil || apierrors.IsAlreadyExists(err), nil
			})
		}
	})
	poll(t, 30*time.Second, "the bounded CRD to refuse the overflowing duration", func(ctx context.Context) (bool, error) {
		obj := specObject(t, paResource, v1alpha1.Kind, crdBase+cpuMetric+"schedules: ["+bad[0].schedule+"]")
		obj.SetName("refused")
		_, err := dyn.Resource(paResource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), nil
	})

	sim := metrics.NewSimulated()
	hpaStartTidalWith(t, testenv.LogOnFailure(context.Background(), t, 2), []app.Option{app.WithSimulatedMetrics(sim)}, "--hpa-metrics-source=simulated")
	hpaDeployment(t, ns, "web", 1)
	hpaDeployment(t, ns, "api", 1)
	sim.Set(ns+"/cpu", metrics.Constant(0.3)) // 300m: 6 pods at the 50% target
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 10))
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "api", 50, 1, 4))
	hpaWaitReplicas(t, ns, "web", 6, 60*time.Second)
	hpaWaitReplicas(t, ns, "api", 4, 60*time.Second)

	for _, b := range bad {
		poll(t, 30*time.Second, b.name+" reported as unreadable, naming "+b.field, func(context.Context) (bool, error) {
			c := hpaCondition(hpaGetPA(t, ns, b.name), autoscalingv2.ScalingActive)
			return c.Status == corev1.ConditionFalse && c.Reason == controller.EventInvalidSpec && strings.Contains(c.Message, b.field+": Invalid value"), nil
		})
		ev := hpaWaitEvent(t, ns, controller.EventInvalidSpec, b.field+": Invalid value")
		if ev.InvolvedObject.Name != b.name || ev.Type != corev1.EventTypeWarning {
			t.Errorf("event %s %s on %s, want a warning on %s", ev.Type, ev.Message, ev.InvolvedObject.Name, b.name)
		}
	}
}

// withRelaxedCRD runs f while relax has changed every schema of the
// PodAutoscaler CRD's version (to store objects an older CRD admitted),
// and restores the CRD after (also when f fails the test).
func withRelaxedCRD(t *testing.T, relax func(*apiextensionsv1.JSONSchemaProps), f func()) {
	t.Helper()
	client, err := apiextensions.NewForConfig(cluster(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	name := v1alpha1.Resource + "." + v1alpha1.GroupName
	crd, err := crds.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bounded := crd.Spec.Versions[0].Schema.DeepCopy()
	setSchema := func(s *apiextensionsv1.CustomResourceValidation) {
		crd, err := crds.Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			crd.Spec.Versions[0].Schema = s
			_, err = crds.Update(context.Background(), crd, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("update the CRD: %v", err)
		}
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			setSchema(bounded)
		}
	}
	t.Cleanup(restore)
	relaxed := bounded.DeepCopy()
	eachSchema(relaxed.OpenAPIV3Schema, relax)
	setSchema(relaxed)
	f()
	restore()
}
