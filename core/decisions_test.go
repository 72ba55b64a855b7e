package core

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/expander"
)

// The report's plans come out as plain data: the pick with its options and
// expander steps, the per-group reasons of the pods left, and the blocking
// pod of an unremovable node.
func TestDecisionsOfReport(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}}
	}
	big, web, db := pod("big"), pod("web"), pod("db")
	r := &Iteration{
		observed: observed{now: time.Unix(1_800_000_000, 0), pending: []*corev1.Pod{big, web},
			groupOfNode: map[string]string{"n1": "small", "n2": ""}},
		health: clusterstate.Health{Healthy: true},
		plan: &scaleup.Plan{
			ScaleUps: []scaleup.ScaleUp{{Group: "large", From: 1, To: 3, Pods: []*corev1.Pod{web},
				Estimates: []scaleup.EstimateSummary{{Group: "large", NodeCount: 2, Pods: 1}, {Group: "small", NodeCount: 4, Pods: 1}},
				Decision:  expander.Decision{Steps: []expander.Step{{Strategy: "least-waste", Kept: []string{"large"}}}}}},
			NoScaleUp: []scaleup.NoScaleUp{{Pods: []*corev1.Pod{big}, ByNodeGroup: map[string][]string{"small": {"Insufficient cpu"}}}},
		},
		scaleDown: &scaleDownReport{plan: &scaledown.Plan{Unremovable: []scaledown.Unremovable{{Node: "n1", Reason: scaledown.BlockedByPod,
			Blocker: &scaledown.Blocker{Pod: db, Reason: "NotReplicated"}}}}},
	}
	d := DecisionsOf(r)
	if len(d.ScaleUp.ScaleUps) != 1 {
		t.Fatalf("scale-ups %+v, want 1", d.ScaleUp.ScaleUps)
	}
	up := d.ScaleUp.ScaleUps[0]
	if up.NodeGroup != "large" || up.Nodes != 2 || len(up.Options) != 2 || up.Expander[0].Kept[0] != "large" || up.Pods[0] != "ns/web" {
		t.Errorf("scale-up %+v, want large +2 for ns/web out of 2 options", up)
	}
	if n := d.ScaleUp.NoScaleUp; len(n) != 1 || n[0].Pods[0] != "ns/big" || n[0].Reasons["small"][0] != "Insufficient cpu" {
		t.Errorf("no scale-up %+v, want ns/big with small's Insufficient cpu", n)
	}
	if u := d.ScaleDown.Unremovable; len(u) != 1 || u[0].Pod != "ns/db" || u[0].Blocker != "NotReplicated" || u[0].Reason != "BlockedByPod" {
		t.Errorf("unremovable %+v, want n1 blocked by ns/db", u)
	}
	if _, ok := d.NodeGroupOfNode["n2"]; ok || d.NodeGroupOfNode["n1"] != "small" {
		t.Errorf("node groups of nodes %v, want n1 in small and n2 in none", d.NodeGroupOfNode)
	}
}
