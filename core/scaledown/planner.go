package scaledown

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
)

// Planner remembers the last plan and returns it again when nothing it
// depends on changed: the same snapshot version, candidates, group sizes,
// nodes being deleted, PDB budgets and rules. A loop where the cluster
// stands still then costs nothing.
type Planner struct {
	key  uint64
	plan *Plan
}

// Plan is Decide, reusing the previous plan when its input is the same.
// reused tells which happened.
func (p *Planner) Plan(ctx context.Context, in Input) (plan *Plan, reused bool, err error) {
	key := inputKey(in)
	if p.plan != nil && key == p.key {
		return p.plan, true, nil
	}
	plan, err = Decide(ctx, in)
	if err != nil {
		return nil, false, err
	}
	p.key, p.plan = key, plan
	return plan, false, nil
}

func inputKey(in Input) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "v%d|%s|%+v|%v|", in.Checker.Snapshot().Version(), in.Salt, in.Rules, in.IgnoreDaemonSetsUtilization)
	for _, c := range in.Candidates {
		fmt.Fprintf(h, "%s,%s,%g,%v;", c.Name, c.Group, c.Threshold, c.Unready)
	}
	groups := make([]string, 0, len(in.Groups))
	for id, g := range in.Groups {
		groups = append(groups, fmt.Sprintf("%s=%d/%d", id, g.Target, g.Min))
	}
	sort.Strings(groups)
	fmt.Fprintf(h, "|%v|%v|", groups, in.Deleting)
	for _, pdb := range in.PDBs {
		fmt.Fprintf(h, "%s/%s@%s:%d;", pdb.Namespace, pdb.Name, pdb.ResourceVersion, pdb.Status.DisruptionsAllowed)
	}
	return h.Sum64()
}
