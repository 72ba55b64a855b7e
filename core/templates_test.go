package core

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/templates"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// templateGroup is a node group that only has a template; it counts the
// times it was asked for it.
type templateGroup struct {
	cloudprovider.NodeGroup
	asked *int
}

func (g templateGroup) Id() string { return "g" }

func (g templateGroup) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	*g.asked++
	return &cloudprovider.NodeTemplate{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "template-g", Labels: map[string]string{"pool": "g"}}}}, nil
}

// The loop keeps a group's template made from a live node for the
// iterations the group has no node, until the cache entry expires or the
// provider no longer lists the group; it reads the live node's pods from
// the snapshot.
func TestGroupTemplateKeepsTheLiveNodesCopy(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "g-1", Labels: map[string]string{"pool": "g", "bootstrapped": "yes"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(start.Add(-time.Hour))}}}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: "kube-system", UID: "ds-logs"}}
	dsPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "logs-abc", Namespace: "kube-system", UID: "p-1",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
		Spec: corev1.PodSpec{NodeName: "g-1"}}
	snap := simulator.NewSnapshot()
	if _, err := snap.AddNode(node); err != nil {
		t.Fatal(err)
	}
	pi, err := framework.NewPodInfo(dsPod)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.AddPod(pi, "g-1"); err != nil {
		t.Fatal(err)
	}
	asked := 0
	g := templateGroup{asked: &asked}
	l := &observer{templates: map[string]groupTemplateState{}, opts: Options{NodeInfoCacheExpireTime: 10 * time.Minute}}
	steps := []struct {
		name   string
		after  time.Duration
		nodes  []*corev1.Node
		forget bool
		want   string
		asked  int
	}{
		{name: "a live node", nodes: []*corev1.Node{node}, want: templates.NodeName("g"), asked: 0},
		{name: "at zero, within the expiry", after: 10 * time.Minute, want: templates.NodeName("g"), asked: 0},
		{name: "at zero, after it", after: 10*time.Minute + time.Second, want: "template-g", asked: 1},
		{name: "the live node again", after: 11 * time.Minute, nodes: []*corev1.Node{node}, want: templates.NodeName("g"), asked: 1},
		{name: "the group gone and back", after: 12 * time.Minute, forget: true, want: "template-g", asked: 2},
	}
	for _, s := range steps {
		if s.forget {
			l.forgetTemplates(nil)
		}
		o := &observation{now: start.Add(s.after), snapshot: snap}
		tmpl, err := l.groupTemplate(context.Background(), o, g, s.nodes, nil)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if tmpl.Node.Name != s.want || asked != s.asked {
			t.Fatalf("%s: template %s, provider asked %d times; want %s, %d", s.name, tmpl.Node.Name, asked, s.want, s.asked)
		}
		if s.want != "template-g" && (len(tmpl.Pods) != 1 || tmpl.Pods[0].Name != "logs-abc" || tmpl.Node.Labels["bootstrapped"] != "yes") {
			t.Fatalf("%s: pods %v, labels %v: want the live node's DaemonSet pod and labels", s.name, tmpl.Pods, tmpl.Node.Labels)
		}
	}
}

// brokenGroup is a node group whose provider template cannot be made.
type brokenGroup struct{ templateGroup }

func (brokenGroup) TemplateNodeInfo(ctx context.Context) (*cloudprovider.NodeTemplate, error) {
	return nil, errors.New("no instance type")
}

// A provider that cannot make the template is named in the error, which
// keeps the group from growing this iteration.
func TestGroupTemplateProviderError(t *testing.T) {
	l := &observer{templates: map[string]groupTemplateState{}, opts: Options{NodeInfoCacheExpireTime: time.Hour}}
	o := &observation{now: time.Unix(1_800_000_000, 0), snapshot: simulator.NewSnapshot()}
	_, err := l.groupTemplate(context.Background(), o, brokenGroup{}, nil, nil)
	if err == nil || err.Error() != "node group g: template node: no instance type" {
		t.Fatalf("error %v, want node group g: template node: no instance type", err)
	}
	if _, kept := l.templates["g"]; kept {
		t.Fatal("a failed template left a cache entry")
	}
}
