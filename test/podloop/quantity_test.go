package podloop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// unbounded is a 13-character quantity Kubernetes' parser takes hours on.
const unbounded = "1e-2000000000"

// quantityField is a quantity field of a PodAutoscaler's spec: the spec
// with Q where the quantity goes, and the field's path.
type quantityField struct{ spec, field string }

func quantityFields() []quantityField {
	out := []quantityField{
		{`metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}, watermarks: {high: "Q"}}]`,
			"spec.metrics[0].watermarks.high"},
		{`metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}, watermarks: {low: "Q"}}]`,
			"spec.metrics[0].watermarks.low"},
		{cpuMetric + `behavior: {scaleUp: {tolerance: "Q"}}`, "spec.behavior.scaleUp.tolerance"},
		{cpuMetric + `behavior: {scaleDown: {tolerance: "Q"}}`, "spec.behavior.scaleDown.tolerance"},
	}
	for _, m := range []struct{ source, metric string }{
		{"resource", `{type: Resource, resource: {name: cpu, target: T}}`},
		{"containerResource", `{type: ContainerResource, containerResource: {name: cpu, container: app, target: T}}`},
		{"pods", `{type: Pods, pods: {metric: {name: qps}, target: T}}`},
		{"object", `{type: Object, object: {describedObject: {apiVersion: v1, kind: Service, name: web}, metric: {name: hits}, target: T}}`},
		{"external", `{type: External, external: {metric: {name: queue}, target: T}}`},
	} {
		for _, target := range []struct{ typ, key string }{{"Value", "value"}, {"AverageValue", "averageValue"}} {
			t := fmt.Sprintf(`{type: %s, %s: "Q"}`, target.typ, target.key)
			out = append(out, quantityField{"metrics: [" + strings.Replace(m.metric, "T", t, 1) + "]",
				"spec.metrics[0]." + m.source + ".target." + target.key})
		}
	}
	return out
}

// Every quantity field of a PodAutoscaler refuses, at once, a quantity
// whose exponent has more than 3 digits and one longer than 64 characters,
// with the message of the field's pattern or length, and accepts the
// longest and smallest a pattern allows. Before the CRD bounded its
// quantities, the watermarks' rules parsed "1e-2000000000" for hours (this
// test then runs into its -timeout) and the metric targets accepted it.
func TestCRDRefusesUnboundedQuantities(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	pattern := "should match '" + v1alpha1.QuantityPattern + "'"
	for _, f := range quantityFields() {
		for _, tc := range []struct{ q, want string }{
			{unbounded, pattern},
			{"1e-20000000", pattern},
			{"1e1000", pattern},
			{"1" + strings.Repeat("0", 64), "may not be more than 64 bytes"},
			{"0." + strings.Repeat("0", 61) + "1", ""},
			{"1.5e-999", ""},
		} {
			err := createFromSpec(t, dyn, paResource, v1alpha1.Kind, ns, crdBase+strings.Replace(f.spec, "Q", tc.q, 1))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s %.20q refused: %v", f.field, tc.q, err)
			case tc.want != "" && !hasCause(causes(err, false), metav1.StatusCause{Field: f.field, Message: tc.want}):
				t.Errorf("%s %.20q: error %v, want %s", f.field, tc.q, err, tc.want)
			}
		}
	}
}

// The status's quantities are bounded too (only tidal writes them).
func TestCRDRefusesUnboundedStatusQuantities(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 8))
	pa, err := dyn.Resource(paResource).Namespace(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	current := map[string]any{"type": "External", "external": map[string]any{"metric": map[string]any{"name": "queue"},
		"current": map[string]any{"averageValue": unbounded}}}
	if err := unstructured.SetNestedSlice(pa.Object, []any{current}, "status", "currentMetrics"); err != nil {
		t.Fatal(err)
	}
	_, err = dyn.Resource(paResource).Namespace(ns).UpdateStatus(context.Background(), pa, metav1.UpdateOptions{})
	field := "status.currentMetrics[0].external.current.averageValue"
	if !hasCause(causes(err, false), metav1.StatusCause{Field: field, Message: "should match '" + v1alpha1.QuantityPattern + "'"}) {
		t.Fatalf("status update: %v, want a refusal at %s", err, field)
	}
}

// A PodAutoscaler stored while the CRD still accepted a target of
// "1e-2000000000" (before its quantities were bounded) neither stalls
// tidal's informer nor stops the pod loop: it is reported with the field
// named and left alone, and the autoscaler beside it scales. Before tidal
// checked quantities before parsing them, its informer never synced and
// the Deployment never scaled.
func TestStoredUnboundedQuantityDoesNotStallThePodLoop(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	bad := specObject(t, paResource, v1alpha1.Kind,
		crdBase+`metrics: [{type: External, external: {metric: {name: queue}, target: {type: AverageValue, averageValue: "`+unbounded+`"}}}]`)
	bad.SetName("stored")
	create := func(ctx context.Context, opts metav1.CreateOptions) error {
		_, err := dyn.Resource(paResource).Namespace(ns).Create(ctx, bad, opts)
		return err
	}
	withUnboundedCRD(t, func() {
		poll(t, 30*time.Second, "the CRD without bounds to take effect", func(ctx context.Context) (bool, error) {
			err := create(ctx, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
	})
	poll(t, 30*time.Second, "the bounded CRD to take effect again", func(ctx context.Context) (bool, error) {
		err := create(ctx, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), nil
	})

	sim := metrics.NewSimulated()
	hpaStartTidalWith(t, testenv.LogOnFailure(context.Background(), t, 2), []app.Option{app.WithSimulatedMetrics(sim)}, "--hpa-metrics-source=simulated")
	hpaDeployment(t, ns, "web", 1)
	sim.Set(ns+"/cpu", metrics.Constant(0.3)) // 300m: 6 pods at the 50% target
	hpaCreatePA(t, hpaCPUAutoscaler(ns, "web", 50, 1, 10))
	hpaWaitReplicas(t, ns, "web", 6, 60*time.Second)

	want := `spec.metrics[0].external.target.averageValue: Invalid value: "` + unbounded + `"`
	poll(t, 30*time.Second, "the stored PodAutoscaler reported as unreadable", func(context.Context) (bool, error) {
		pa := hpaGetPA(t, ns, "stored")
		c := hpaCondition(pa, autoscalingv2.ScalingActive)
		return c.Status == corev1.ConditionFalse && c.Reason == controller.EventInvalidQuantity && strings.Contains(c.Message, want), nil
	})
	hpaWaitEvent(t, ns, controller.EventInvalidQuantity, want)
}

// withUnboundedCRD runs f while the PodAutoscaler CRD's metric targets
// have controller-gen's pattern and no length, as before tidal bounded
// them, and restores the CRD after (also when f fails the test).
func withUnboundedCRD(t *testing.T, f func()) {
	t.Helper()
	withRelaxedCRD(t, func(s *apiextensionsv1.JSONSchemaProps) {
		if s.XIntOrString && len(s.XValidations) == 0 { // the rules of the others need their length
			s.Pattern, s.MaxLength = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`, nil
		}
	}, f)
}

// eachSchema calls f on s and every schema under its properties and items.
func eachSchema(s *apiextensionsv1.JSONSchemaProps, f func(*apiextensionsv1.JSONSchemaProps)) {
	f(s)
	for k, p := range s.Properties {
		eachSchema(&p, f)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		eachSchema(s.Items.Schema, f)
	}
}
