package scaleup

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// Memory remembers the last decision that asked for nothing (no scale-up,
// no option for the expander to choose from, no pod left for lack of time)
// and returns it again while nothing it read changed: the snapshot (its
// version), the objects the scheduler's plugins read from informers, the
// pending pod groups and their pods in order, the node groups (sizes,
// upcoming nodes, availability, template), the groups pods wait for and the
// limits. Pods waiting for nodes already requested then cost next to
// nothing per iteration. A decision that scaled up is never reused:
// carrying it out changes its input.
//
// Any other decision starts from what the last one found (DecideFrom), so
// that it costs in proportion to what changed.
type Memory struct {
	key   uint64
	plan  *Plan
	reuse Reuse
}

// Decide is Decide, reusing the remembered decision when its input is the
// same; reused tells which happened.
func (m *Memory) Decide(ctx context.Context, in Input) (plan *Plan, reused bool, err error) {
	key, err := inputKey(in)
	if err != nil {
		return nil, false, err
	}
	if m.plan != nil && key == m.key {
		return m.plan.again(in), true, nil
	}
	m.plan = nil
	plan, m.reuse, err = DecideFrom(ctx, in, m.reuse)
	if err != nil {
		return nil, false, err
	}
	if len(plan.ScaleUps) == 0 && plan.Skipped == 0 && !plan.hadOptions {
		m.key, m.plan = key, plan
	}
	return plan, false, nil
}

// again is the plan for in, whose pending groups have the same keys and
// pods as the plan's: its refusals name in's groups and pods.
func (p *Plan) again(in Input) *Plan {
	byKey := make(map[string]*simulator.PodGroup, len(in.Pending))
	for _, g := range in.Pending {
		byKey[g.Key] = g
	}
	out := *p
	out.Timings = Timings{}
	out.NoScaleUp = make([]NoScaleUp, len(p.NoScaleUp))
	for i, n := range p.NoScaleUp {
		g := byKey[n.Group.Key]
		out.NoScaleUp[i] = NoScaleUp{Group: g, Pods: samePods(g, n.Pods), Reasons: n.Reasons, ByNodeGroup: n.ByNodeGroup}
	}
	return &out
}

// samePods are the pods of g with the UIDs of pods, in their order.
func samePods(g *simulator.PodGroup, pods []*corev1.Pod) []*corev1.Pod {
	byUID := make(map[types.UID]*corev1.Pod, len(g.Pods))
	for _, p := range g.Pods {
		byUID[p.UID] = p
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if q, ok := byUID[p.UID]; ok {
			out = append(out, q)
		}
	}
	return out
}

// inputKey hashes what a decision that asks for nothing reads: the input's
// data (the checker by identity and versions). The expander's context is
// left out: such a decision offered the expander no choice.
func inputKey(in Input) (uint64, error) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%p|v%d|l%d|%+v|%d|%v|%q|%q|%d|", in.Checker, in.Checker.Snapshot().Version(), in.Checker.ListerVersion(),
		in.Limits, in.MaxRounds, in.BalanceSimilar, in.BalancingIgnoredLabels, in.BalancingLabels, in.MaxGroupBinpacking)
	notReady := make([]string, 0, len(in.NotReady))
	for name, yes := range in.NotReady {
		if yes {
			notReady = append(notReady, name)
		}
	}
	slices.Sort(notReady)
	fmt.Fprintf(h, "%q|", notReady)
	// The pods' maps and the pending pods, thousands, are written each
	// string with its length (as unambiguous as quoting, without
	// formatting each).
	b := appendPodMap(nil, in.Cleared)
	b = appendPodMap(b, in.Waiting)
	b = binary.AppendUvarint(b, uint64(len(in.Pending)))
	h.Write(b)
	for _, g := range in.Pending {
		b = appendString(b[:0], g.Key)
		b = binary.AppendUvarint(b, uint64(len(g.Pods)))
		for _, p := range g.Pods {
			b = appendString(b, string(p.UID))
		}
		h.Write(b)
	}
	for _, g := range in.Groups {
		fmt.Fprintf(h, "|%q %d %d %d %d %q %q", g.ID, g.Min, g.Max, g.Target, g.Upcoming, g.Unavailable, g.Starting)
		if err := writeTemplate(h, g.Template); err != nil {
			return 0, fmt.Errorf("node group %s: %w", g.ID, err)
		}
	}
	return h.Sum64(), nil
}

// appendPodMap appends m (a pod's UID to a node or group), its entries in
// the order of their UIDs, after its length.
func appendPodMap(b []byte, m map[types.UID]string) []byte {
	uids := slices.Sorted(maps.Keys(m))
	b = binary.AppendUvarint(b, uint64(len(uids)))
	for _, uid := range uids {
		b = appendString(appendString(b, string(uid)), m[uid])
	}
	return b
}

// appendString appends s to b after its length.
func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// writeTemplate writes what the simulations read of a template: the node
// and its pods' names and scheduling fields.
func writeTemplate(w io.Writer, t *simulator.NodeTemplate) error {
	if t == nil {
		_, err := io.WriteString(w, "<none>")
		return err
	}
	raw, err := json.Marshal(t.Node)
	if err != nil {
		return fmt.Errorf("template node: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	for _, p := range t.Pods {
		if _, err := fmt.Fprintf(w, "%q/%q/%q:%q;", p.Namespace, p.Name, p.UID, simulator.EquivalenceKey(p)); err != nil {
			return err
		}
	}
	return nil
}
