package deploy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// deploy/monitoring builds, and its objects find each other and tidal: the
// Service selects the Deployment's pods and names its port, the
// ServiceMonitor selects the Service and scrapes that port, the dashboard
// ConfigMap carries the dashboard for Grafana's sidecar.
func TestMonitoringFindsTidal(t *testing.T) {
	base, mon := kustomize(t, "base"), kustomize(t, "monitoring")
	var kinds []string
	for _, o := range mon {
		kinds = append(kinds, o.GetKind())
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap", "PrometheusRule", "PrometheusRule", "Service", "ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Fatalf("deploy/monitoring has %v, want %v", kinds, want)
	}
	svc, sm, dep := Find(mon, "Service", "tidal-metrics"), Find(mon, "ServiceMonitor", "tidal"), Find(base, "Deployment", "tidal")
	podLabels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	if !labels.SelectorFromSet(selector).Matches(labels.Set(podLabels)) {
		t.Errorf("the Service selects %v, the Deployment's pods are labelled %v", selector, podLabels)
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	port := ports[0].(map[string]any)
	if port["targetPort"] != "http" || !strings.Contains(fmt.Sprint(dep.Object), "name:http") {
		t.Errorf("the Service targets port %v; the Deployment's container port is named http", port["targetPort"])
	}
	smSelector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if !labels.SelectorFromSet(smSelector).Matches(labels.Set(svc.GetLabels())) {
		t.Errorf("the ServiceMonitor selects %v, the Service is labelled %v", smSelector, svc.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if ep := endpoints[0].(map[string]any); ep["port"] != port["name"] || ep["path"] != "/metrics" {
		t.Errorf("the ServiceMonitor scrapes port %v path %v, want %v /metrics", ep["port"], ep["path"], port["name"])
	}
	namespaces, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	if !slices.Contains(namespaces, svc.GetNamespace()) || svc.GetNamespace() != dep.GetNamespace() {
		t.Errorf("the ServiceMonitor looks in %v; the Service is in %s, tidal in %s", namespaces, svc.GetNamespace(), dep.GetNamespace())
	}
	cm := Find(mon, "ConfigMap", "tidal-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard ConfigMap is labelled %v, want grafana_dashboard=1", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if !json.Valid([]byte(data["tidal-dashboard.json"])) {
		t.Error("the dashboard ConfigMap holds no valid tidal-dashboard.json")
	}
}

// The alert rules the issue asks for are there, each with a severity.
func TestAlertRules(t *testing.T) {
	groups, err := RuleGroups("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]string{
		"TidalScaleUpFailing":                  "cluster_autoscaler_failed_scale_ups_total",
		"TidalNodeGroupBackoff":                "cluster_autoscaler_node_group_backoff_status",
		"TidalClusterUnsafe":                   "cluster_autoscaler_cluster_safe_to_autoscale",
		"TidalUnschedulablePodsStuck":          "cluster_autoscaler_unschedulable_pods_count",
		"TidalPodAutoscalerMetricsUnavailable": "tidal_pod_autoscaler_metric_errors_total",
		"TidalPodAutoscalerSpecUnusable":       "tidal_pod_autoscaler_invalid_specs",
	}
	for _, r := range groups[0].Rules {
		if metric, ok := reads[r.Alert]; !ok || !strings.Contains(r.Expr, metric) {
			t.Errorf("alert %s reads %q; want one of %v", r.Alert, r.Expr, reads)
		}
		if r.Labels["severity"] == "" {
			t.Errorf("alert %s has no severity", r.Alert)
		}
		delete(reads, r.Alert)
	}
	if len(reads) > 0 {
		t.Errorf("alerts missing: %v", reads)
	}
}

// ksmConfig is kube-state-metrics' CustomResourceState configuration, with
// the fields of its Go types (pkg/customresourcestate) that the file uses;
// a field it does not know is an error.
type ksmConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		Resources []struct {
			GroupVersionKind struct {
				Group, Version, Kind string
			} `json:"groupVersionKind"`
			MetricNamePrefix string              `json:"metricNamePrefix"`
			LabelsFromPath   map[string][]string `json:"labelsFromPath"`
			Metrics          []struct {
				Name string `json:"name"`
				Help string `json:"help"`
				Each struct {
					Type  string     `json:"type"`
					Gauge *ksmMetric `json:"gauge"`
					Info  *ksmMetric `json:"info"`
				} `json:"each"`
			} `json:"metrics"`
		} `json:"resources"`
	} `json:"spec"`
}

type ksmMetric struct {
	Path           []string            `json:"path"`
	LabelsFromPath map[string][]string `json:"labelsFromPath"`
	ValueFrom      []string            `json:"valueFrom"`
	NilIsZero      bool                `json:"nilIsZero"`
}

// metadataFields are the object metadata kube-state-metrics may read (the
// CRD's schema does not describe metadata).
var metadataFields = []string{"name", "namespace", "generation", "uid", "labels", "annotations", "creationTimestamp"}

// schemaAt follows path from schema (an OpenAPI v3 schema), stepping into
// the items of arrays; nil when the path does not exist.
func schemaAt(schema map[string]any, path []string) map[string]any {
	for _, field := range path {
		if items, ok := schema["items"].(map[string]any); ok {
			schema = items
		}
		props, _ := schema["properties"].(map[string]any)
		next, ok := props[field].(map[string]any)
		if !ok {
			return nil
		}
		schema = next
	}
	return schema
}

// Every path of the kube-state-metrics configuration is a field of the
// PodAutoscaler CRD, and the configuration names the CRD's group, version
// and kind.
func TestKubeStateMetricsConfigReadsPodAutoscalerFields(t *testing.T) {
	var cfg ksmConfig
	if err := readStrict(filepath.Join(Dir(), "monitoring", "kube-state-metrics-podautoscalers.yaml"), &cfg, true); err != nil {
		t.Fatal(err)
	}
	crd := Find(kustomize(t, "crd"), "CustomResourceDefinition", "podautoscalers.autoscaling.tidal.dev")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := versions[0].(map[string]any)
	root, _, _ := unstructured.NestedMap(version, "schema", "openAPIV3Schema")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	if cfg.Kind != "CustomResourceStateMetrics" || len(cfg.Spec.Resources) != 1 {
		t.Fatalf("want one resource of a CustomResourceStateMetrics, got kind %q with %d", cfg.Kind, len(cfg.Spec.Resources))
	}
	res := cfg.Spec.Resources[0]
	if gvk := res.GroupVersionKind; gvk.Group != group || gvk.Version != version["name"] || gvk.Kind != kind {
		t.Errorf("the configuration is for %v, the CRD serves %s/%v %s", gvk, group, version["name"], kind)
	}
	fieldOf := func(what string, path []string, base map[string]any) {
		if schemaAt(base, path) == nil {
			t.Errorf("%s: %v is no field of the PodAutoscaler CRD", what, path)
		}
	}
	objectField := func(what string, path []string) {
		if len(path) == 2 && path[0] == "metadata" {
			if !slices.Contains(metadataFields, path[1]) {
				t.Errorf("%s: %v is no object metadata", what, path)
			}
			return
		}
		fieldOf(what, path, root)
	}
	for label, path := range res.LabelsFromPath {
		objectField("label "+label, path)
	}
	for _, m := range res.Metrics {
		spec := m.Each.Gauge
		if strings.EqualFold(m.Each.Type, "info") {
			spec = m.Each.Info
		}
		if spec == nil || m.Help == "" {
			t.Errorf("metric %s: no %s settings or no help", m.Name, m.Each.Type)
			continue
		}
		objectField(m.Name, spec.Path)
		at := schemaAt(root, spec.Path)
		if at == nil {
			continue
		}
		for label, path := range spec.LabelsFromPath {
			fieldOf(m.Name+" label "+label, path, at)
		}
		if len(spec.ValueFrom) > 0 {
			fieldOf(m.Name+" value", spec.ValueFrom, at)
		}
	}
}

// The PodAutoscaler alerts read only series the kube-state-metrics
// configuration makes, and the labels it sets.
func TestPodAutoscalerAlertsReadKubeStateMetricsSeries(t *testing.T) {
	var cfg ksmConfig
	if err := readStrict(filepath.Join(Dir(), "monitoring", "kube-state-metrics-podautoscalers.yaml"), &cfg, true); err != nil {
		t.Fatal(err)
	}
	res := cfg.Spec.Resources[0]
	made, labelsSet := map[string]bool{}, map[string]bool{}
	for l := range res.LabelsFromPath {
		labelsSet[l] = true
	}
	for _, m := range res.Metrics {
		made[res.MetricNamePrefix+"_"+m.Name] = true
		if m.Each.Gauge != nil {
			for l := range m.Each.Gauge.LabelsFromPath {
				labelsSet[l] = true
			}
		}
	}
	groups, err := RuleGroups("podautoscaler-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`\bkube_[a-z_]+`)
	label := regexp.MustCompile(`\$labels\.([a-z_]+)|\{([a-z_]+)=`)
	for _, r := range groups[0].Rules {
		for _, n := range name.FindAllString(r.Expr, -1) {
			if !made[n] {
				t.Errorf("alert %s reads %s, which the kube-state-metrics configuration does not make", r.Alert, n)
			}
		}
		for _, m := range label.FindAllStringSubmatch(r.Expr+r.Annotations["description"], -1) {
			if l := m[1] + m[2]; !labelsSet[l] {
				t.Errorf("alert %s uses label %s, which the configuration does not set", r.Alert, l)
			}
		}
	}
}
