package scaleup

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// stable tells whether the next decision, finding the packing's nodes
// upcoming, would place every pod the packing put on them there again: it
// fills upcoming nodes' copies largest pods first (fillUpcoming), which
// need not reproduce a packing made another way. A packing it would not
// reproduce makes that decision ask for more nodes for the pods left over
// while the first ones start, and those nodes end empty: the packing is
// not adopted. The snapshot must be as the filter left it.
func (d *decision) stable(ctx context.Context, p *packing) (bool, error) {
	snap := d.in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	next := &decision{in: d.in, plan: &Plan{Awaiting: map[types.UID]string{}, AwaitingOn: map[types.UID]string{}},
		upcoming: map[string]string{}, starting: map[string]string{}}
	var coming []fwk.NodeInfo
	for _, ni := range snap.Infos() {
		if g, ok := d.upcoming[ni.Node().Name]; ok {
			next.upcoming[ni.Node().Name] = g
			coming = append(coming, ni)
		}
	}
	var remaining []pending
	for i, u := range p.ups {
		g := d.groupByID(u.Group)
		for n := 0; n < u.To-u.From; n++ {
			name := fmt.Sprintf("stable-%s-%d-%d", u.Group, i, n)
			ni, err := g.Template.AddCopy(snap, name)
			if err != nil {
				return false, fmt.Errorf("node group %s: planned node: %w", u.Group, err)
			}
			next.upcoming[name] = u.Group
			coming = append(coming, ni)
		}
		for _, group := range simulator.NewEquivalenceKeys().Group(u.Pods) {
			gc, err := d.checkGroup(ctx, group)
			if err != nil {
				return false, err
			}
			remaining = append(remaining, pending{group: group, pods: group.Pods, check: gc})
		}
	}
	left, err := next.fillUpcoming(ctx, remaining, coming, nil)
	if err != nil {
		return false, err
	}
	return len(left) == 0, nil
}
