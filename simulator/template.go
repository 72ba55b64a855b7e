package simulator

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TemplateNodeLabel marks nodes the simulator made from a node group's
// template, as Cluster Autoscaler marks its template nodes.
const TemplateNodeLabel = "cluster-autoscaler.kubernetes.io/template-node"

// NodeTemplate is what a new node of a group looks like when it starts: the
// node and the pods that run on it from the start (static and DaemonSet
// pods).
type NodeTemplate struct {
	GroupID string
	Node    *corev1.Node
	Pods    []*corev1.Pod
	// podInfos are the parsed Pods, made once.
	podInfos []*framework.PodInfo
}

// NewNodeTemplate prepares a template. The node and pods are not changed.
func NewNodeTemplate(groupID string, node *corev1.Node, pods []*corev1.Pod) (*NodeTemplate, error) {
	t := &NodeTemplate{GroupID: groupID, Node: node, Pods: pods}
	for _, p := range pods {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			return nil, fmt.Errorf("node group %s: template pod %s/%s: %w", groupID, p.Namespace, p.Name, err)
		}
		t.podInfos = append(t.podInfos, pi)
	}
	return t, nil
}

// AddCopy adds a copy of the template to the snapshot, named name (its
// hostname label too), with copies of its pods, and returns the new node.
//
// The copies share the template's spec and status, and its pods' (nothing
// in a snapshot changes an object): only names, the node's labels and the
// pods' node are their own, so an estimate adding thousands of nodes does
// not copy whole objects each time.
func (t *NodeTemplate) AddCopy(s *Snapshot, name string) (*framework.NodeInfo, error) {
	node := &corev1.Node{TypeMeta: t.Node.TypeMeta, ObjectMeta: t.Node.ObjectMeta, Spec: t.Node.Spec, Status: t.Node.Status}
	node.Name = name
	node.UID = types.UID(name)
	node.Labels = make(map[string]string, len(t.Node.Labels)+2)
	maps.Copy(node.Labels, t.Node.Labels)
	node.Labels[corev1.LabelHostname] = name
	node.Labels[TemplateNodeLabel] = "true"
	ni, err := s.AddNode(node)
	if err != nil {
		return nil, err
	}
	for _, pi := range t.podInfos {
		copied := *pi
		pod := &corev1.Pod{TypeMeta: pi.Pod.TypeMeta, ObjectMeta: pi.Pod.ObjectMeta, Spec: pi.Pod.Spec, Status: pi.Pod.Status}
		pod.Name = pod.Name + "-" + name
		pod.UID = types.UID(string(pi.Pod.UID) + "-" + name)
		pod.Spec.NodeName = name
		copied.Pod = pod
		if err := s.AddPod(&copied, name); err != nil {
			return nil, err
		}
	}
	return ni, nil
}
