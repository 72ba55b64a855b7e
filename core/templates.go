package core

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/daemon"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// buildTemplate is the node a group would add: the provider's template
// node, without the taints that come and go (taints.ForTemplate), and its
// static pods, plus a pod for every DaemonSet the DaemonSet controller
// would run there (decided by its own rule).
func buildTemplate(g cloudprovider.NodeGroup, daemonSets []*appsv1.DaemonSet, taints clusterstate.Taints) (*simulator.NodeTemplate, error) {
	t, err := g.TemplateNodeInfo()
	if err != nil {
		return nil, fmt.Errorf("node group %s: template node: %w", g.Id(), err)
	}
	if t == nil || t.Node == nil {
		return nil, fmt.Errorf("node group %s: the provider returned no template node", g.Id())
	}
	node := t.Node
	if kept := taints.ForTemplate(node.Spec.Taints); len(kept) != len(node.Spec.Taints) {
		node = node.DeepCopy()
		node.Spec.Taints = kept
	}
	pods := append([]*corev1.Pod(nil), t.Pods...)
	for _, ds := range daemonSets {
		if run, _ := daemon.NodeShouldRunDaemonPod(klog.Background(), node, ds); !run {
			continue
		}
		p := daemon.NewPod(ds, node.Name)
		p.Name = fmt.Sprintf("%s-%s", ds.Name, node.Name)
		p.UID = ds.UID
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
		pods = append(pods, p)
	}
	return simulator.NewNodeTemplate(g.Id(), node, pods)
}
