package local

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ProviderIDPrefix starts the providerID of every local node:
	// local:///<group>/<node-name>.
	ProviderIDPrefix = "local:///"
	// NodeGroupLabel names a local node's group, for people using kubectl.
	NodeGroupLabel = "local.tidal.dev/node-group"
	// Region is the region label every local node carries.
	Region = "local"
)

// providerID is the id of a node of group.
func providerID(group, name string) string { return ProviderIDPrefix + group + "/" + name }

// parseProviderID splits local:///<group>/<name>. ok is false for ids of
// other clouds or malformed ones.
func parseProviderID(id string) (group, name string, ok bool) {
	rest, found := strings.CutPrefix(id, ProviderIDPrefix)
	if !found {
		return "", "", false
	}
	group, name, found = strings.Cut(rest, "/")
	if !found || group == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return group, name, true
}

// buildNode makes the Node object of a group's machine named name. The
// status carries capacity and allocatable; the simulated kubelet adds
// conditions once the node exists.
func buildNode(g GroupSpec, name string) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:           name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelTopologyZone:       g.Zone,
		corev1.LabelTopologyRegion:     Region,
		corev1.LabelInstanceTypeStable: g.InstanceType,
		NodeGroupLabel:                 g.Name,
	}
	for k, v := range g.Labels {
		labels[k] = v
	}
	pods := g.Pods
	if pods == 0 {
		pods = 110
	}
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              g.CPU.DeepCopy(),
		corev1.ResourceMemory:           g.Memory.DeepCopy(),
		corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.NodeSpec{
			ProviderID: providerID(g.Name, name),
			Taints:     append([]corev1.Taint(nil), g.Taints...),
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Phase:       corev1.NodeRunning,
		},
	}
}

// nodeName is the n-th node name of a group: general-a-00003.
func nodeName(group string, n int) string { return fmt.Sprintf("%s-%05d", group, n) }

// templateNodeName names the group's template node.
func templateNodeName(group string) string { return "template-node-for-" + group }
