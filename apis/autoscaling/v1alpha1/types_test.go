package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// hpaSpec is an autoscaling/v2 HorizontalPodAutoscaler spec using every
// field; it must read as a PodAutoscaler spec unchanged.
const hpaSpec = `
scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
minReplicas: 2
maxReplicas: 20
metrics:
- type: Resource
  resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
- type: ContainerResource
  containerResource: {name: memory, container: app, target: {type: AverageValue, averageValue: 500Mi}}
- type: Pods
  pods: {metric: {name: qps, selector: {matchLabels: {verb: GET}}}, target: {type: AverageValue, averageValue: "10"}}
- type: Object
  object:
    describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main}
    metric: {name: hits}
    target: {type: Value, value: 2k}
- type: External
  external: {metric: {name: queue}, target: {type: AverageValue, averageValue: "30"}}
behavior:
  scaleUp:
    stabilizationWindowSeconds: 0
    selectPolicy: Max
    tolerance: 50m
    policies: [{type: Pods, value: 4, periodSeconds: 15}, {type: Percent, value: 100, periodSeconds: 15}]
  scaleDown:
    stabilizationWindowSeconds: 300
    policies: [{type: Percent, value: 10, periodSeconds: 60}]
`

func TestAnHPASpecIsAPodAutoscalerSpec(t *testing.T) {
	var want autoscalingv2.HorizontalPodAutoscalerSpec
	if err := yaml.UnmarshalStrict([]byte(hpaSpec), &want); err != nil {
		t.Fatal(err)
	}
	var pa PodAutoscalerSpec
	if err := yaml.UnmarshalStrict([]byte(hpaSpec), &pa); err != nil {
		t.Fatal(err)
	}
	got, marks := pa.HPASpec()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Fatalf("HPASpec() = %+v\nwant %+v", got, want)
	}
	if marks != nil {
		t.Fatalf("watermarks %v without any in the spec", marks)
	}
	// And back: the PodAutoscaler spec serializes to the same document.
	a, _ := yaml.Marshal(pa)
	b, _ := yaml.Marshal(want)
	if string(a) != string(b) {
		t.Fatalf("serialized differently:\n%s\nvs\n%s", a, b)
	}
}

func TestWatermarksAreIndexAligned(t *testing.T) {
	var pa PodAutoscalerSpec
	if err := yaml.UnmarshalStrict([]byte(hpaSpec), &pa); err != nil {
		t.Fatal(err)
	}
	// The second metric gets watermarks.
	if err := yaml.UnmarshalStrict([]byte(`{high: "80", low: 40, maxScaleDownPercent: 10}`), &pa.Metrics[1].Watermarks); err != nil {
		t.Fatal(err)
	}
	_, marks := pa.HPASpec()
	if len(marks) != len(pa.Metrics) || marks[0] != nil || marks[1] == nil || marks[1].High.String() != "80" ||
		marks[1].Low.String() != "40" || *marks[1].MaxScaleDownPercent != 10 {
		t.Fatalf("watermarks %+v", marks)
	}
	c := pa.DeepCopy()
	c.Metrics[1].Watermarks.High.Set(1)
	if pa.Metrics[1].Watermarks.High.String() != "80" {
		t.Fatal("DeepCopy shares the watermarks")
	}
}

func TestCRDManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "crd", "autoscaling.tidal.dev_podautoscalers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group string
			Names struct {
				Kind       string
				ShortNames []string
			}
			Versions []struct {
				Name                     string
				AdditionalPrinterColumns []struct{ Name string }
				Subresources             map[string]any
			}
		}
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	s := crd.Spec
	if s.Group != GroupName || s.Names.Kind != Kind || len(s.Names.ShortNames) != 1 || s.Names.ShortNames[0] != "tpa" {
		t.Fatalf("names %+v", s)
	}
	if len(s.Versions) != 1 || s.Versions[0].Name != Version || s.Versions[0].Subresources["status"] == nil {
		t.Fatalf("versions %+v", s.Versions)
	}
	var cols []string
	for _, c := range s.Versions[0].AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	if len(cols) != 6 || cols[1] != "Targets" || cols[2] != "MinPods" || cols[3] != "MaxPods" || cols[4] != "Replicas" || cols[5] != "Age" {
		t.Fatalf("printer columns %v", cols)
	}
}
