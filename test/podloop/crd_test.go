package podloop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// The PodAutoscaler CRD refuses what the API server refuses in an
// autoscaling/v2 HorizontalPodAutoscaler, at the same field with the same
// message: each spec below is sent as both, and every cause of the HPA's
// refusal must be among the PodAutoscaler's. (Not covered: a zero or
// negative target value or averageValue, which the CRD cannot check within
// the API server's CEL cost budget; see docs/hpa.md.)

var (
	hpaResource = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	paResource  = v1alpha1.GroupVersionResource
)

// crdBase is a valid spec the cases change.
const crdBase = `scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
maxReplicas: 8
`

const cpuMetric = `metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]
`

func TestCRDRefusesWhatTheHPARefuses(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	for _, tc := range []struct{ name, spec string }{
		{"negative tolerance", cpuMetric + `behavior: {scaleUp: {tolerance: "-0.1"}}`},
		{"policy period zero", cpuMetric + `behavior: {scaleDown: {policies: [{type: Pods, value: 1, periodSeconds: 0}]}}`},
		{"policy period above 1800", cpuMetric + `behavior: {scaleUp: {policies: [{type: Percent, value: 100, periodSeconds: 1801}]}}`},
		{"negative policy value", cpuMetric + `behavior: {scaleUp: {policies: [{type: Pods, value: -1, periodSeconds: 15}]}}`},
		{"zero policy value", cpuMetric + `behavior: {scaleDown: {policies: [{type: Percent, value: 0, periodSeconds: 15}]}}`},
		{"unknown policy type", cpuMetric + `behavior: {scaleUp: {policies: [{type: Nodes, value: 1, periodSeconds: 15}]}}`},
		{"unknown selectPolicy", cpuMetric + `behavior: {scaleDown: {selectPolicy: Most}}`},
		{"negative stabilization window", cpuMetric + `behavior: {scaleDown: {stabilizationWindowSeconds: -1}}`},
		{"stabilization window above 3600", cpuMetric + `behavior: {scaleUp: {stabilizationWindowSeconds: 3601}}`},
		{"empty policies", cpuMetric + `behavior: {scaleUp: {policies: []}}`},
		{"zero averageUtilization", `metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 0}}}]`},
		{"negative container averageUtilization",
			`metrics: [{type: ContainerResource, containerResource: {name: cpu, container: app, target: {type: Utilization, averageUtilization: -5}}}]`},
		{"unknown target type", `metrics: [{type: Resource, resource: {name: cpu, target: {type: Percent, averageUtilization: 50}}}]`},
		{"unknown metric type", `metrics: [{type: Custom}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := crdBase + tc.spec
			hpaErr := createFromSpec(t, dyn, hpaResource, "HorizontalPodAutoscaler", ns, spec)
			paErr := createFromSpec(t, dyn, paResource, v1alpha1.Kind, ns, spec)
			if hpaErr == nil || !apierrors.IsInvalid(hpaErr) {
				t.Fatalf("the HPA API accepted (or failed otherwise on) the spec, so the case proves nothing: %v\n%s", hpaErr, spec)
			}
			if paErr == nil || !apierrors.IsInvalid(paErr) {
				t.Fatalf("PodAutoscaler accepted, HPA refused with %v:\n%s", hpaErr, spec)
			}
			for _, want := range causes(hpaErr, true) {
				if !hasCause(causes(paErr, false), want) {
					t.Errorf("the HPA's refusal %s: %s is not among the PodAutoscaler's: %v", want.Field, want.Message, paErr)
				}
			}
		})
	}
}

// The watermarks, which autoscaling/v2 has not: the cases of
// hpa/controller/testdata/watermark-bounds.yaml, which the watermarks
// annotation of a HorizontalPodAutoscaler answers the same way
// (TestParseWatermarksRefusesWhatTheCRDRefuses).
func TestCRDBoundsWatermarks(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "hpa", "controller", "testdata", "watermark-bounds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Watermarks     json.RawMessage
		Field, Message string
	}
	if err := yaml.UnmarshalStrict(raw, &cases); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		err := createFromSpec(t, dyn, paResource, v1alpha1.Kind, ns, crdBase+
			`metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}, watermarks: `+string(tc.Watermarks)+`}]`)
		field := strings.TrimSuffix("spec.metrics[0].watermarks."+tc.Field, ".")
		switch {
		case tc.Message == "" && err != nil:
			t.Errorf("watermarks %s refused: %v", tc.Watermarks, err)
		case tc.Message != "" && !hasCause(causes(err, false), metav1.StatusCause{Field: field, Message: tc.Message}):
			t.Errorf("watermarks %s: error %v, want %s: %s", tc.Watermarks, err, field, tc.Message)
		}
	}
}

func dynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cluster(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// createFromSpec creates an object of the resource with the YAML spec, as
// kubectl would send it (empty lists kept), and returns the API's error.
func createFromSpec(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind, ns, spec string) error {
	t.Helper()
	obj := specObject(t, gvr, kind, spec)
	obj.SetGenerateName("crd-")
	_, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	return err
}

// specObject is an object of the resource with the YAML spec.
func specObject(t *testing.T, gvr schema.GroupVersionResource, kind, spec string) *unstructured.Unstructured {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(spec), &s); err != nil {
		t.Fatalf("spec %q: %v", spec, err)
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind, "spec": s}}
}

// kindOfError starts the message of a cause of the HPA's refusal: the
// value is written differently by the HPA's validation (the value) and a
// CRD's (its type, or nothing), and a CRD rule cannot say "Required".
var kindOfError = regexp.MustCompile(`^(Invalid value: ("[^"]*"|[^:]*)|Required value): `)

// causes returns the causes of err's refusal; with detail, each message
// without its kindOfError prefix.
func causes(err error, detail bool) []metav1.StatusCause {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	out := status.Status().Details.Causes
	for i := range out {
		if detail {
			out[i].Message = kindOfError.ReplaceAllString(out[i].Message, "")
		}
	}
	return out
}

// hasCause reports whether one of got is at want's field with a message
// containing want's.
func hasCause(got []metav1.StatusCause, want metav1.StatusCause) bool {
	for _, c := range got {
		if c.Field == want.Field && strings.Contains(c.Message, want.Message) {
			return true
		}
	}
	return false
}

// The API server defaults a PodAutoscaler's minReplicas to 1, as it does a
// HorizontalPodAutoscaler's, so a spec reads back the same as either.
func TestCRDDefaultsMinReplicasLikeTheHPA(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	hpaInstallCRD(t)
	ns := hpaNamespace(t)
	dyn := dynamicClient(t)
	for _, r := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{hpaResource, "HorizontalPodAutoscaler"}, {paResource, v1alpha1.Kind}} {
		obj := specObject(t, r.gvr, r.kind, crdBase+cpuMetric)
		obj.SetGenerateName("min-")
		created, err := dyn.Resource(r.gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", r.kind, err)
		}
		got, found, err := unstructured.NestedInt64(created.Object, "spec", "minReplicas")
		if err != nil || !found || got != 1 {
			t.Errorf("%s without minReplicas reads back minReplicas=%d (set: %v, %v), want 1 as the API server's default",
				r.kind, got, found, err)
		}
	}
}

// kubectl finds PodAutoscalers by the short name tpa, and no other resource
// the cluster serves claims it (pa is Knative Serving's PodAutoscaler).
func TestCRDShortName(t *testing.T) {
	t.Parallel()
	clusters.Share(t) // no tidal: it keeps to namespaces of its own
	hpaInstallCRD(t)
	_, lists, err := cluster(t).Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var claims []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			if slices.Contains(r.ShortNames, "tpa") {
				claims = append(claims, l.GroupVersion+"/"+r.Name)
			}
		}
	}
	if want := paResource.GroupVersion().String() + "/" + paResource.Resource; len(claims) != 1 || claims[0] != want {
		t.Fatalf("short name tpa is claimed by %v, want %s only", claims, want)
	}
}
