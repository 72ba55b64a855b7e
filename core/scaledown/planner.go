package scaledown

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// Planner remembers the last plan and returns it again when nothing it
// read changed: the snapshot (its version, which node heartbeats do not
// move), the objects the scheduler's plugins read from informers, the
// candidates, group sizes, nodes being deleted, PDB budgets, rules and salt
// (all compared whatever their order), the answers about pods' controllers,
// and, for pods being deleted, which side of their grace period the time is.
// The answers about pods' controllers are part of the input (Owners).
// A loop where the cluster stands still then costs next to nothing. When
// something changed, the plan is made from the last one's Reuse
// (DecideFrom): only the removals the change may have touched are
// simulated again.
type Planner struct {
	key   uint64
	plan  *Plan
	reuse Reuse
}

// Plan is Decide, reusing the previous plan when its input is the same.
// reused tells which happened.
func (p *Planner) Plan(ctx context.Context, in Input) (plan *Plan, reused bool, err error) {
	key := inputKey(in)
	if p.plan != nil && key == p.key && p.plan.reads.hold(in) {
		return p.plan, true, nil
	}
	plan, next, err := DecideFrom(ctx, in, p.reuse)
	p.reuse = next
	if err != nil {
		p.plan = nil
		return nil, false, err
	}
	p.key, p.plan = key, plan
	return plan, false, nil
}

// inputKey hashes the plain part of the input, in an order of its own.
func inputKey(in Input) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%p|v%d|l%d|%q|%+v|%v|%v|%d|", in.Checker, in.Checker.Snapshot().Version(), in.Checker.ListerVersion(),
		in.Salt, in.Rules, in.IgnoreMirrorPodsUtilization, in.KeepUnready, in.MaxNonEmptyUnneeded)
	var buf []byte
	for _, c := range sortedCandidates(in.Candidates) {
		buf = appendCandidate(buf[:0], c)
		h.Write(buf)
	}
	h.Write([]byte{'|'})
	for _, id := range slices.Sorted(maps.Keys(in.Groups)) {
		fmt.Fprintf(h, "%q=%d/%d;", id, in.Groups[id].Target, in.Groups[id].Min)
	}
	fmt.Fprintf(h, "|%q|", slices.Sorted(slices.Values(in.Deleting)))
	for _, pdb := range sortedPDBs(in.PDBs) {
		fmt.Fprintf(h, "%q/%q:%q:%d;", pdb.Namespace, pdb.Name, selectorString(pdb.Spec.Selector), pdb.Status.DisruptionsAllowed)
	}
	fmt.Fprintf(h, "|%v|%x|%x|", slices.Sorted(maps.Keys(in.Owners.Kinds)), ownersHash(in.Owners.Existing), arrivingHash(in.Arriving))
	for _, uid := range slices.Sorted(maps.Keys(in.Evicted)) {
		fmt.Fprintf(h, "%s@%d;", uid, in.Evicted[uid].UnixNano())
	}
	return h.Sum64()
}

func selectorString(s *metav1.LabelSelector) string {
	if s == nil {
		return "<nil>"
	}
	return metav1.FormatLabelSelector(s)
}

// sortedCandidates is a copy of cs in name order.
func sortedCandidates(cs []Candidate) []Candidate {
	return slices.SortedFunc(slices.Values(cs), func(a, b Candidate) int { return cmp.Compare(a.Name, b.Name) })
}

// appendCandidate appends what identifies a candidate's part of the input:
// its name and group, its thresholds and flags.
func appendCandidate(buf []byte, c Candidate) []byte {
	buf = strconv.AppendQuote(buf, c.Name)
	buf = strconv.AppendQuote(buf, c.Group)
	buf = strconv.AppendFloat(buf, c.Threshold, 'g', -1, 64)
	buf = append(buf, ',')
	buf = strconv.AppendFloat(buf, c.GPUThreshold, 'g', -1, 64)
	buf = strconv.AppendBool(buf, c.IgnoreDaemonSetsUtilization)
	buf = strconv.AppendBool(buf, c.Unready)
	return append(buf, ';')
}

// arrivingHash hashes which arriving pods go on which node, whatever
// their order: the sum of each placement's own FNV-1a hash.
func arrivingHash(arriving []simulator.Placed) uint64 {
	var sum uint64
	for _, a := range arriving {
		p := a.Info.GetPod()
		sum += fnvAdd(fnvAdd(fnvAdd(fnvOffset, string(p.UID)), p.ResourceVersion), a.Node)
	}
	return sum
}

// ownersHash hashes what is known of controllers whatever the map's
// order: the sum of each entry's own FNV-1a hash.
func ownersHash(owners map[OwnerKey]bool) uint64 {
	var sum uint64
	for k, exists := range owners {
		h := fnvAdd(fnvAdd(fnvAdd(fnvOffset, k.Kind), k.Namespace), k.Name)
		if exists {
			h = fnvAdd(h, "+")
		}
		sum += h
	}
	return sum
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvAdd adds s and a separator to the FNV-1a hash h.
func fnvAdd[S string | []byte](h uint64, s S) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return (h ^ 0xff) * fnvPrime
}

// sortedPDBs is a copy of pdbs in namespace and name order.
func sortedPDBs(pdbs []*policyv1.PodDisruptionBudget) []*policyv1.PodDisruptionBudget {
	return slices.SortedFunc(slices.Values(pdbs), func(a, b *policyv1.PodDisruptionBudget) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// reads is what a plan read besides the hashed input: the time, which
// matters only to pods being deleted (long terminating ones hold nothing).
type reads struct {
	// madeAt is the input's time; until, when set, the moment a pod being
	// deleted passes its grace period and the plan no longer holds.
	madeAt, until time.Time
}

// hold tells whether in's time is on the same side of every grace period
// as the plan's.
func (r reads) hold(in Input) bool {
	return !in.Now.Before(r.madeAt) && (r.until.IsZero() || !in.Now.After(r.until))
}
