package core

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"
)

// tidal's status in Cluster Autoscaler's layout, read back as a script
// would read Cluster Autoscaler's ConfigMap: its field names and values,
// and each condition's transition time kept while its status stays.
func TestClusterAutoscalerStatusLayout(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := Status{
		ClusterWide: ClusterWideStatus{
			Health:    HealthStatus{Status: "Healthy", NodeCounts: map[string]int{"registered": 5, "ready": 4, "notStarted": 1, "unready": 0}},
			ScaleUp:   ScaleUpStatus{Status: "InProgress", UnschedulablePods: 3, ScaleUps: []ScaleUpEntry{{NodeGroup: "spot", From: 1, To: 2}}},
			ScaleDown: ScaleDownStatus{Unneeded: []UnneededEntry{{Node: "n1", NodeGroup: "on-demand"}}},
		},
		NodeGroups: []NodeGroupStatus{
			{Name: "on-demand", Health: "Healthy", MinSize: 1, MaxSize: 10, Target: 3, Registered: 3, Ready: 3},
			{Name: "spot", Health: "BackedOff", Reason: "OutOfResources", LastFailure: "InsufficientInstanceCapacity: no capacity",
				MinSize: 0, MaxSize: 5, Target: 2, Registered: 2, Ready: 1, Upcoming: 1},
		},
	}
	first, transitions := clusterAutoscalerStatus(s, nil, t0)
	got := parseCAStatus(t, first)
	want := map[string]any{
		"time":             "2026-11-23 12:00:00 +0000 UTC",
		"autoscalerStatus": "Running",
		"health":           "Healthy", "registered": 5.0, "ready": 4.0, "notStarted": 1.0,
		"scaleUp": "InProgress", "scaleDown": "CandidatesPresent", "candidates": 1.0,
		"groups":  2,
		"group0":  []any{"on-demand", "Healthy", 3.0, 1.0, 10.0, "NoActivity", "CandidatesPresent", 1.0},
		"group1":  []any{"spot", "Healthy", 2.0, 0.0, 5.0, "Backoff", "NoCandidates", nil},
		"backoff": map[string]any{"errorCode": "OutOfResources", "errorMessage": "InsufficientInstanceCapacity: no capacity"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Cluster Autoscaler's layout:\ngot  %v\nwant %v", got, want)
	}

	// A minute on, scale-up is over: its transition time moves, health's
	// stays.
	s.ClusterWide.ScaleUp = ScaleUpStatus{Status: "NoActivity"}
	t1 := t0.Add(time.Minute)
	second, _ := clusterAutoscalerStatus(s, transitions, t1)
	h, su := second.ClusterWide.Health, second.ClusterWide.ScaleUp
	if !h.LastTransitionTime.Time.Equal(t0) || !h.LastProbeTime.Time.Equal(t1) || su.Status != "NoActivity" || !su.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("after a minute: health %s since %v probed %v, scale-up %s since %v; want health since %v probed %v, scale-up NoActivity since %v",
			h.Status, h.LastTransitionTime, h.LastProbeTime, su.Status, su.LastTransitionTime, t0, t1, t1)
	}
}

// parseCAStatus encodes st as the ConfigMap holds it and reads back the
// fields a script of Cluster Autoscaler's users reads.
func parseCAStatus(t *testing.T, st CAStatus) map[string]any {
	t.Helper()
	raw, err := yaml.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	get := func(v any, path ...any) any {
		for _, p := range path {
			switch k := p.(type) {
			case string:
				v = v.(map[string]any)[k]
			case int:
				v = v.([]any)[k]
			}
		}
		return v
	}
	cw := m["clusterWide"]
	groups := m["nodeGroups"].([]any)
	group := func(i int) []any {
		g := groups[i]
		return []any{get(g, "name"), get(g, "health", "status"), get(g, "health", "cloudProviderTarget"), get(g, "health", "minSize"),
			get(g, "health", "maxSize"), get(g, "scaleUp", "status"), get(g, "scaleDown", "status"), get(g, "scaleDown", "candidates")}
	}
	return map[string]any{
		"time": m["time"], "autoscalerStatus": m["autoscalerStatus"],
		"health":     get(cw, "health", "status"),
		"registered": get(cw, "health", "nodeCounts", "registered", "total"), "ready": get(cw, "health", "nodeCounts", "registered", "ready"),
		"notStarted": get(cw, "health", "nodeCounts", "registered", "notStarted"),
		"scaleUp":    get(cw, "scaleUp", "status"), "scaleDown": get(cw, "scaleDown", "status"), "candidates": get(cw, "scaleDown", "candidates"),
		"groups": len(groups), "group0": group(0), "group1": group(1), "backoff": get(groups[1], "scaleUp", "backoffInfo"),
	}
}

// With --status-config-map-layout=cluster-autoscaler the ConfigMap holds
// Cluster Autoscaler's YAML under its key and its last-updated annotation.
func TestStatusWriterWritesClusterAutoscalersLayout(t *testing.T) {
	ctx := context.Background()
	clock := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	client := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-autoscaler-status", Namespace: "kube-system"}})
	w := newStatusWriter(client, Options{WriteStatusConfigMap: true, Namespace: "kube-system", StatusConfigMapName: "cluster-autoscaler-status",
		ClusterAutoscalerStatusLayout: true}, clock)
	if err := w.write(ctx, Status{ClusterWide: ClusterWideStatus{Health: HealthStatus{Status: "Healthy"}}}); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "cluster-autoscaler-status", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st CAStatus
	if err := yaml.UnmarshalStrict([]byte(cm.Data[StatusConfigMapKey]), &st); err != nil {
		t.Fatalf("status %q is not Cluster Autoscaler's layout: %v", cm.Data[StatusConfigMapKey], err)
	}
	if st.AutoscalerStatus != "Running" || st.ClusterWide.Health.Status != "Healthy" ||
		cm.Annotations[CAStatusUpdatedAnnotation] != "2026-11-23 12:00:00 +0000 UTC" {
		t.Errorf("status %+v, annotations %v; want Running, Healthy and Cluster Autoscaler's last-updated", st, cm.Annotations)
	}
}
