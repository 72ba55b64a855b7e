package scaleup

import corev1 "k8s.io/api/core/v1"

// Limits are the cluster-wide bounds of scale-ups.
type Limits struct {
	// MaxNodesTotal bounds the cluster's node count; 0 means no bound.
	MaxNodesTotal int
	// MaxNodesPerScaleUp bounds the nodes one decision adds; 0 means none.
	MaxNodesPerScaleUp int
	// MaxMilliCores and MaxMemoryBytes bound the cluster's total capacity;
	// 0 means no bound.
	MaxMilliCores  int64
	MaxMemoryBytes int64
	// Nodes, MilliCores and MemoryBytes are the cluster's totals now,
	// upcoming nodes included.
	Nodes       int
	MilliCores  int64
	MemoryBytes int64
}

// WithUsage is lim with the cluster's totals set: the nodes' count and
// capacity, plus each group's upcoming nodes counted as copies of its
// template.
func (lim Limits) WithUsage(nodes []*corev1.Node, groups []Group) Limits {
	lim.Nodes, lim.MilliCores, lim.MemoryBytes = 0, 0, 0
	add := func(n int, c corev1.ResourceList) {
		lim.Nodes += n
		lim.MilliCores += int64(n) * c.Cpu().MilliValue()
		lim.MemoryBytes += int64(n) * c.Memory().Value()
	}
	for _, n := range nodes {
		add(1, n.Status.Capacity)
	}
	for _, g := range groups {
		if g.Template != nil && g.Upcoming > 0 {
			add(g.Upcoming, g.Template.Node.Status.Capacity)
		}
	}
	return lim
}

// headroom is how many nodes group g may still add in this decision, and
// the reason when that is what binds.
func (d *decision) headroom(g Group) (int, string) { return d.headroomWith(g, d.planned) }

// headroomWith is headroom when the decision plans the nodes counted in
// planned (per group).
func (d *decision) headroomWith(g Group, plannedNodes map[string]int) (int, string) {
	// The target already counts the upcoming nodes.
	n, why := g.Max-g.Target-plannedNodes[g.ID], ReasonMaxSize
	lim := d.in.Limits
	planned, cores, mem := d.plannedTotals(plannedNodes)
	bound := func(limit int, reason string) {
		if limit < n {
			n, why = limit, reason
		}
	}
	if lim.MaxNodesPerScaleUp > 0 {
		bound(lim.MaxNodesPerScaleUp-planned, ReasonMaxPerScaleUp)
	}
	if lim.MaxNodesTotal > 0 {
		bound(lim.MaxNodesTotal-lim.Nodes-planned, ReasonMaxNodesTotal)
	}
	nodeCores, nodeMem := templateCapacity(g)
	if lim.MaxMilliCores > 0 && nodeCores > 0 {
		bound(int((lim.MaxMilliCores-lim.MilliCores-cores)/nodeCores), ReasonMaxCores)
	}
	if lim.MaxMemoryBytes > 0 && nodeMem > 0 {
		bound(int((lim.MaxMemoryBytes-lim.MemoryBytes-mem)/nodeMem), ReasonMaxMemory)
	}
	return n, why
}

func (d *decision) plannedTotals(planned map[string]int) (nodes int, milliCores, memory int64) {
	for id, n := range planned {
		g := d.groupByID(id)
		c, m := templateCapacity(*g)
		nodes += n
		milliCores += int64(n) * c
		memory += int64(n) * m
	}
	return nodes, milliCores, memory
}

func templateCapacity(g Group) (milliCores, memory int64) {
	c := g.Template.Node.Status.Capacity
	if len(c) == 0 {
		c = g.Template.Node.Status.Allocatable
	}
	return c.Cpu().MilliValue(), c.Memory().Value()
}
