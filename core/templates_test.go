package core

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
)

// templateGroup is a node group that only has a template.
type templateGroup struct {
	cloudprovider.NodeGroup
	node *corev1.Node
}

func (g templateGroup) Id() string { return "g" }

func (g templateGroup) TemplateNodeInfo() (*cloudprovider.NodeTemplate, error) {
	return &cloudprovider.NodeTemplate{Node: g.node}, nil
}

func TestTemplatesLeaveTransientTaintsOut(t *testing.T) {
	dedicated := corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	provider := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "template-g", Labels: map[string]string{"pool": "g"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: clusterstate.StartupTaintPrefix + "gpu-driver", Value: "installing", Effect: corev1.TaintEffectNoSchedule},
			dedicated,
			{Key: "maintenance", Effect: corev1.TaintEffectNoExecute},
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		}}}
	// A DaemonSet that does not tolerate the startup taint still runs on
	// the node once the taint is gone; one that does not tolerate the
	// group's own taint never does.
	onBatch := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system", UID: "ds-1"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "c", Image: "agent"}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		}}}}
	elsewhere := onBatch.DeepCopy()
	elsewhere.Name, elsewhere.UID, elsewhere.Spec.Template.Spec.Tolerations = "other", "ds-2", nil
	tmpl, err := buildTemplate(templateGroup{node: provider}, []*appsv1.DaemonSet{onBatch, elsewhere},
		clusterstate.Taints{Status: []string{"maintenance"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.Node.Spec.Taints; len(got) != 1 || got[0] != dedicated {
		t.Fatalf("template taints %v, want only %v", got, dedicated)
	}
	if len(tmpl.Pods) != 1 || tmpl.Pods[0].Name != "agent-template-g" {
		t.Fatalf("template pods %v, want the tolerating DaemonSet's only", tmpl.Pods)
	}
	if len(provider.Spec.Taints) != 4 {
		t.Fatalf("the provider's template node was changed: %v", provider.Spec.Taints)
	}
}
