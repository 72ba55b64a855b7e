package benchgen

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// shape is the allocatable (= capacity) cpu and memory of a node.
type shape struct {
	cpuMilli int64
	memMi    int64
}

// groupShape returns the node shape of node group k.
func groupShape(k int) shape {
	return [...]shape{
		{4000, 16384}, {8000, 32768}, {16000, 65536}, {32000, 131072},
	}[k%4]
}

// zoneName returns zone i of the three zones.
func zoneName(i int) string {
	return [...]string{"zone-a", "zone-b", "zone-c"}[i%3]
}

// groupTainted reports whether node group k carries the dedicated taint.
func groupTainted(k int) bool { return k%5 == 4 }

// nodeGroups builds the K node groups with their template nodes.
func (b *builder) nodeGroups() []NodeGroup {
	groups := make([]NodeGroup, b.p.K)
	for k := range groups {
		g := &groups[k]
		g.ID = nodeGroupID(k)
		g.MaxSize = b.p.NGMax
		g.TargetSize = groupSize(b.p.N, b.p.K, k)
		g.Zone = zoneName(k)
		if groupTainted(k) {
			t := dedicatedTaint()
			g.Taint = &t
		}
		g.Template = b.node(templateName(g.ID), k, g.Zone)
	}
	return groups
}

// node builds a Ready node of group k called name.
func (b *builder) node(name string, k int, zone string) *corev1.Node {
	labels := map[string]string{
		LabelHostname:  name,
		LabelZone:      zone,
		LabelNodeGroup: nodeGroupID(k),
		LabelOS:        osLinux,
	}
	n := &corev1.Node{ObjectMeta: b.meta(name, "", labels)}
	n.Spec.ProviderID = name
	if groupTainted(k) {
		n.Spec.Taints = []corev1.Taint{dedicatedTaint()}
	}
	n.Status.Capacity = nodeResources(groupShape(k))
	n.Status.Allocatable = nodeResources(groupShape(k))
	n.Status.Conditions = []corev1.NodeCondition{{
		Type:               corev1.NodeReady,
		Status:             corev1.ConditionTrue,
		LastTransitionTime: b.ts,
	}}
	return n
}

// nodeResources returns a new resource list for a node of shape s.
func nodeResources(s shape) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    cpuQuantity(s.cpuMilli),
		corev1.ResourceMemory: memQuantity(s.memMi),
		corev1.ResourcePods:   *resource.NewQuantity(MaxPodsPerNode, resource.DecimalSI),
	}
}

// nodes builds the N nodes and draws their utilization in percent.
func (b *builder) nodes(groups []NodeGroup) ([]*corev1.Node, []int) {
	nodes := make([]*corev1.Node, b.p.N)
	util := make([]int, b.p.N)
	for j := range nodes {
		k := j % b.p.K
		nodes[j] = b.node(nodeName(j), k, groups[k].Zone)
		util[j] = b.utilization(j)
	}
	return nodes, util
}

// utilization draws the utilization % of node j.
func (b *builder) utilization(j int) int {
	p := b.p
	if b.rng.u(streamNodeUtil, j, 0, 100) < int64(p.UnderPct) {
		return p.UnderMin + int(b.rng.u(streamNodeUtil, j, 1, int64(p.UnderMax-p.UnderMin+1)))
	}
	return p.BusyMin + int(b.rng.u(streamNodeUtil, j, 1, int64(p.BusyMax-p.BusyMin+1)))
}
