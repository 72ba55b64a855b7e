package simulator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// GroupCheck is a pod group with its PreFilter state and what is needed to
// walk nodes quickly: the requests for a cheap resource pre-check, and
// whether a node that rejected one pod of the group rejects every later one.
type GroupCheck struct {
	*PodCheck
	Group *PodGroup
	req   *framework.Resource
	// monotone is true when placing pods only ever makes nodes less
	// suitable for the group (no topology spread, no required pod
	// affinity), so a scan can resume where the last pod fitted.
	monotone bool
	// spread is true when the group has topology spread constraints.
	spread bool
}

// CheckGroup runs PreFilter for a group's representative.
func (c *Checker) CheckGroup(ctx context.Context, g *PodGroup) (*GroupCheck, error) {
	pc, err := c.PreFilter(ctx, g.Representative())
	if err != nil {
		return nil, err
	}
	return c.groupCheck(pc, g), nil
}

// CheckPod is CheckGroup for one parsed pod, as moved off a node: its
// requests are not computed again.
func (c *Checker) CheckPod(ctx context.Context, info *framework.PodInfo) *GroupCheck {
	return c.groupCheck(c.PreFilterInfo(ctx, info), &PodGroup{Pods: []*corev1.Pod{info.Pod}})
}

// CheckBoundPod is CheckPod for a pod bound to a node, judged as it would
// be once evicted from it, without a copy of the pod with no node name: of
// the PreFilter and Filter plugins, only NodeName's Filter reads the pod's
// node name, and it passes every node for a pod without one, so the check
// skips it. The check's pod keeps its node name.
func (c *Checker) CheckBoundPod(ctx context.Context, info *framework.PodInfo) *GroupCheck {
	gc := c.CheckPod(ctx, info)
	if info.Pod.Spec.NodeName == "" || gc.Status != nil {
		return gc
	}
	skip := gc.state.GetSkipFilterPlugins()
	if skip == nil {
		skip = sets.New[string]()
		gc.state.SetSkipFilterPlugins(skip)
	}
	skip.Insert(names.NodeName)
	return gc
}

func (c *Checker) groupCheck(pc *PodCheck, g *PodGroup) *GroupCheck {
	res := pc.Info.CalculateResource().Resource.(*framework.Resource)
	pod := g.Representative()
	spread := len(pod.Spec.TopologySpreadConstraints) > 0
	affinity := pod.Spec.Affinity != nil && pod.Spec.Affinity.PodAffinity != nil &&
		len(pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
	return &GroupCheck{PodCheck: pc, Group: g, req: res, monotone: !spread && !affinity, spread: spread}
}

// Requests are the group's pod's effective cpu (millicores) and memory
// (bytes) requests, as the scheduler computes them.
func (gc *GroupCheck) Requests() (milliCPU, memory int64) { return gc.req.MilliCPU, gc.req.Memory }

// ResourcesFit is a cheap pre-check: false only when the node surely lacks
// cpu, memory, ephemeral storage, a pod slot or an extended resource for
// the pod. Nodes that pass still go through every Filter plugin. Insufficient
// says which.
func (gc *GroupCheck) ResourcesFit(ni fwk.NodeInfo) bool {
	n, ok := ni.(*framework.NodeInfo)
	if !ok {
		return true
	}
	r, used, have := gc.req, n.Requested, n.Allocatable
	if len(n.Pods)+1 > have.AllowedPodNumber || short(r.MilliCPU, used.MilliCPU, have.MilliCPU) ||
		short(r.Memory, used.Memory, have.Memory) || short(r.EphemeralStorage, used.EphemeralStorage, have.EphemeralStorage) {
		return false
	}
	for name, want := range r.ScalarResources {
		if short(want, used.ScalarResources[name], have.ScalarResources[name]) {
			return false
		}
	}
	return true
}

// short reports whether a node whose pods use used of have leaves no room
// for want.
func short(want, used, have int64) bool { return want > 0 && used+want > have }

// amount is how much of a resource the pod asks for, the node's pods use
// and the node has.
type amount struct {
	name             corev1.ResourceName
	want, used, have int64
}

// amounts are the pod's requests against n, in the order the scheduler
// checks them: cpu, memory, ephemeral storage, then extended resources by
// name.
func (gc *GroupCheck) amounts(n *framework.NodeInfo) []amount {
	r, used, have := gc.req, n.Requested, n.Allocatable
	out := []amount{
		{corev1.ResourceCPU, r.MilliCPU, used.MilliCPU, have.MilliCPU},
		{corev1.ResourceMemory, r.Memory, used.Memory, have.Memory},
		{corev1.ResourceEphemeralStorage, r.EphemeralStorage, used.EphemeralStorage, have.EphemeralStorage},
	}
	for _, name := range slices.Sorted(maps.Keys(r.ScalarResources)) {
		out = append(out, amount{name, r.ScalarResources[name], used.ScalarResources[name], have.ScalarResources[name]})
	}
	return out
}

// Insufficient is the pre-check's answer as the scheduler's NodeResourcesFit
// plugin gives it: nil when the node has room for the pod, otherwise a
// status naming every resource it lacks, in the scheduler's words and order
// ("Too many pods", "Insufficient cpu", "Insufficient memory",
// "Insufficient ephemeral-storage", "Insufficient example.com/gpu"),
// unresolvable when the pod asks for more than the node has even empty.
func (gc *GroupCheck) Insufficient(ni fwk.NodeInfo) *fwk.Status {
	n, ok := ni.(*framework.NodeInfo)
	if !ok {
		return nil
	}
	var reasons []string
	if len(n.Pods)+1 > n.Allocatable.AllowedPodNumber {
		reasons = append(reasons, "Too many pods")
	}
	code := fwk.Unschedulable
	for _, a := range gc.amounts(n) {
		if !short(a.want, a.used, a.have) {
			continue
		}
		reasons = append(reasons, "Insufficient "+string(a.name))
		if a.want > a.have {
			code = fwk.UnschedulableAndUnresolvable
		}
	}
	if len(reasons) == 0 {
		return nil
	}
	return fwk.NewStatus(code, reasons...)
}

// Shortfalls are Insufficient's reasons with the numbers, for people:
// "Insufficient cpu (needs 3, free 1.5)", "Insufficient memory (needs 6Gi,
// free 3584Mi)" (cpu in cores, other resources as quantities), free being
// what the node's pods leave of its allocatable. Empty when the node has
// room.
func (gc *GroupCheck) Shortfalls(ni fwk.NodeInfo) []string {
	n, ok := ni.(*framework.NodeInfo)
	if !ok {
		return nil
	}
	var out []string
	if len(n.Pods)+1 > n.Allocatable.AllowedPodNumber {
		out = append(out, fmt.Sprintf("Too many pods (%d of %d used)", len(n.Pods), n.Allocatable.AllowedPodNumber))
	}
	for _, a := range gc.amounts(n) {
		if short(a.want, a.used, a.have) {
			out = append(out, fmt.Sprintf("Insufficient %s (needs %s, free %s)", a.name, quantity(a.name, a.want), quantity(a.name, max(a.have-a.used, 0))))
		}
	}
	return out
}

// quantity writes an amount of a resource: cpu in cores ("1.5"), others
// as Kubernetes quantities ("3584Mi").
func quantity(name corev1.ResourceName, v int64) string {
	if name == corev1.ResourceCPU {
		return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
	}
	if name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage {
		return resource.NewQuantity(v, resource.BinarySI).String()
	}
	return resource.NewQuantity(v, resource.DecimalSI).String()
}

// Fits checks the group's pod against one node: the pre-check, then the
// Filter plugins. It returns nil when the pod fits; when the node lacks
// room, the status names the resources, as the scheduler does.
func (c *Checker) Fits(ctx context.Context, gc *GroupCheck, ni fwk.NodeInfo) *fwk.Status {
	if gc.Status != nil {
		return gc.Status
	}
	if !gc.ResourcesFit(ni) {
		if st := gc.Insufficient(ni); st != nil {
			return st
		}
	}
	return c.Filter(ctx, gc.PodCheck, ni)
}

// Cursor walks a node list for one group, remembering where the last pod
// fitted.
type Cursor struct {
	pos int
	// Wrap makes every search look at all nodes, starting at the cursor
	// and wrapping around: for a cursor used as a hint across groups.
	Wrap bool
}

// MoveTo makes the next search start at node index i.
func (c *Cursor) MoveTo(i int) { c.pos = i }

// FindNode returns the index in nodes of a node the group's next pod fits
// on, or -1. Monotone groups resume from the cursor; others wrap around
// once, because placing pods elsewhere can make an earlier node fit again.
func (c *Checker) FindNode(ctx context.Context, gc *GroupCheck, nodes []fwk.NodeInfo, cur *Cursor) int {
	return c.find(ctx, gc, nodes, nil, cur)
}

// find is FindNode; rooms, when given, are the most room left in each
// block of blockSize nodes, and a block without room for the pod is passed
// over at once.
func (c *Checker) find(ctx context.Context, gc *GroupCheck, nodes []fwk.NodeInfo, rooms []room, cur *Cursor) int {
	n := len(nodes)
	if n == 0 {
		return -1
	}
	limit := n - cur.pos
	if !gc.monotone || cur.Wrap {
		limit = n
	}
	if gc.Status != nil {
		return -1
	}
	for i := 0; i < limit; {
		idx := (cur.pos + i) % n
		if rooms != nil && !rooms[idx/blockSize].admits(gc.req) {
			i += min((idx/blockSize+1)*blockSize, n) - idx
			continue
		}
		if gc.ResourcesFit(nodes[idx]) && c.Filter(ctx, gc.PodCheck, nodes[idx]).IsSuccess() {
			cur.pos = idx
			return idx
		}
		i++
	}
	if gc.monotone && !cur.Wrap {
		cur.pos = n
	}
	return -1
}

// PlaceGroup places as many of pods (pods of gc's group) as fit on nodes (a
// subset of the snapshot's nodes), binding them in the snapshot. It returns
// the placements and the pods that did not fit, in order. For a monotone
// group the first pod that does not fit ends the search: the rest are
// equivalent.
func (c *Checker) PlaceGroup(ctx context.Context, gc *GroupCheck, pods []*corev1.Pod, nodes []fwk.NodeInfo) (placed []Placed, unplaced []*corev1.Pod, err error) {
	find := func(cur *Cursor) fwk.NodeInfo {
		if idx := c.FindNode(ctx, gc, nodes, cur); idx >= 0 {
			return nodes[idx]
		}
		return nil
	}
	return c.placeGroup(ctx, gc, pods, len(nodes), 0, find, func(string) {})
}

// placeGroup is PlaceGroup over n nodes searched with find, from node
// index start; bound is told every node a pod is bound to.
func (c *Checker) placeGroup(ctx context.Context, gc *GroupCheck, pods []*corev1.Pod, n, start int, find func(*Cursor) fwk.NodeInfo, bound func(string)) (placed []Placed, unplaced []*corev1.Pod, err error) {
	if n == 0 || gc.Status != nil {
		return nil, pods, nil
	}
	cur := Cursor{pos: start}
	for i, p := range pods {
		ni := find(&cur)
		if ni == nil {
			if gc.monotone {
				return placed, append(unplaced, pods[i:]...), nil
			}
			unplaced = append(unplaced, p)
			continue
		}
		pl, err := c.Place(ctx, gc.PodCheck, p, ni.Node().Name)
		if err != nil {
			return nil, nil, fmt.Errorf("place pod group %s: %w", gc.Group.Key, err)
		}
		bound(pl.Node)
		if placed == nil {
			// Most groups place most of their pods once one fits.
			placed = make([]Placed, 0, len(pods)-i)
		}
		placed = append(placed, pl)
	}
	return placed, unplaced, nil
}

// Placed is a pod bound in the snapshot during a simulation, remembered so
// other groups' PreFilter states can be brought up to date.
type Placed struct {
	Info fwk.PodInfo
	Node string
}

// statefulPlugins keep per-pod PreFilter state that depends on the pods
// already placed.
var statefulPlugins = []string{names.InterPodAffinity, names.PodTopologySpread}

// Stateful reports whether the group's PreFilter state depends on where
// other pods are (it has pod affinity or topology spread to evaluate).
func (gc *GroupCheck) Stateful() bool {
	return gc.Status == nil && gc.stateful()
}

func (gc *GroupCheck) stateful() bool {
	skip := gc.state.GetSkipFilterPlugins()
	for _, name := range statefulPlugins {
		if !skip.Has(name) {
			return true
		}
	}
	return false
}

// CatchUp returns a check of the group valid for the snapshot after placed
// were bound (since the group's PreFilter ran), which the caller may use to
// place pods without changing gc. A group without pod affinity or topology
// spread is returned as is (placing its pods changes no state), unless a
// placed pod has required anti-affinity, which may now reject it: then
// PreFilter runs again. Otherwise the state is cloned and the placed pods
// are added to it, which costs far less than a new PreFilter over every pod
// of the cluster.
func (c *Checker) CatchUp(ctx context.Context, gc *GroupCheck, placed []Placed) (*GroupCheck, error) {
	if gc.Status != nil {
		return gc, nil
	}
	if !gc.stateful() {
		for _, p := range placed {
			if hasRequiredAntiAffinity(p.Info.GetPod()) {
				return c.CheckGroup(ctx, gc.Group)
			}
		}
		return gc, nil
	}
	if len(placed) > 0 && hardSpread(gc.Pod) {
		// See Place: the spread plugin's incremental update is not exact.
		return c.CheckGroup(ctx, gc.Group)
	}
	pc := *gc.PodCheck
	pc.state = gc.state.Clone().(*framework.CycleState)
	for _, p := range placed {
		ni := c.snapshot.NodeInfo(p.Node)
		if ni == nil {
			continue
		}
		if st := c.fw.RunPreFilterExtensionAddPod(ctx, pc.state, pc.Pod, p.Info, ni); !st.IsSuccess() {
			return nil, fmt.Errorf("update scheduling state of pod group %s: %w", gc.Group.Key, st.AsError())
		}
	}
	out := *gc
	out.PodCheck = &pc
	return &out, nil
}

func hasRequiredAntiAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	return a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}
