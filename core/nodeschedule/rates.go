package nodeschedule

import (
	"time"
)

// NodeUsage is what a node contributes to the allocation rates: the
// requests of its scheduled non-terminal pods and its allocatable.
type NodeUsage struct {
	Group string
	Ready bool
	// Requested and Allocatable: CPU in millicores, memory in bytes.
	RequestedCPU, RequestedMemory     int64
	AllocatableCPU, AllocatableMemory int64
}

// RateKey names a rate: the scope ("" for the cluster, else a node group
// id) and the resource.
type RateKey struct {
	Scope, Resource string
}

// Rates are the allocation rates in percent of the ready nodes, for the
// cluster and each group with ready nodes. A scope without allocatable of
// a resource has no rate for it.
func Rates(nodes []NodeUsage) map[RateKey]float64 {
	type sums struct{ req, alloc int64 }
	acc := map[RateKey]*sums{}
	add := func(scope, resource string, req, alloc int64) {
		k := RateKey{scope, resource}
		if acc[k] == nil {
			acc[k] = &sums{}
		}
		acc[k].req += req
		acc[k].alloc += alloc
	}
	for _, n := range nodes {
		if !n.Ready {
			continue
		}
		add("", ResourceCPU, n.RequestedCPU, n.AllocatableCPU)
		add("", ResourceMemory, n.RequestedMemory, n.AllocatableMemory)
		if n.Group != "" {
			add(n.Group, ResourceCPU, n.RequestedCPU, n.AllocatableCPU)
			add(n.Group, ResourceMemory, n.RequestedMemory, n.AllocatableMemory)
		}
	}
	out := map[RateKey]float64{}
	for k, s := range acc {
		if s.alloc > 0 {
			out[k] = 100 * float64(s.req) / float64(s.alloc)
		}
	}
	return out
}

// TriggerState is what the triggers carry from one decision to the next,
// by trigger name: since when each rate has been above its threshold, and
// when each last triggered.
type TriggerState struct {
	AboveSince  map[string]time.Time
	LastTrigger map[string]time.Time
}

// Decision is what the triggers decide at one time.
type Decision struct {
	Raises []Raise
	State  TriggerState
	// Next is when the decision may change without the rates changing
	// (a rate has been above long enough, a cooldown ends); zero: none.
	Next time.Time
}

// Decide applies the triggers at now: a trigger whose rate has stayed
// above its threshold for its For, and which has not triggered within its
// Cooldown, adds its nodes to its group, up to the group's maximum. Groups
// are the node groups with their effective range. A rate that is unknown
// (no ready node in scope) counts as not above.
func Decide(triggers []Trigger, rates map[RateKey]float64, groups []Group, st TriggerState, now time.Time) Decision {
	d := Decision{State: TriggerState{AboveSince: map[string]time.Time{}, LastTrigger: map[string]time.Time{}}}
	byID := map[string]*Group{}
	for i := range groups {
		g := groups[i]
		byID[g.ID] = &g
	}
	wake := func(t time.Time) {
		if t.After(now) && (d.Next.IsZero() || t.Before(d.Next)) {
			d.Next = t
		}
	}
	for _, t := range triggers {
		last, triggered := st.LastTrigger[t.Name]
		if triggered {
			d.State.LastTrigger[t.Name] = last
		}
		scope := ""
		if t.Scope == ScopeNodeGroup {
			scope = t.NodeGroup
		}
		rate, known := rates[RateKey{scope, t.Resource}]
		if !known || rate <= t.Threshold {
			continue
		}
		since, ok := st.AboveSince[t.Name]
		if !ok {
			since = now
		}
		d.State.AboveSince[t.Name] = since
		g := byID[t.NodeGroup]
		switch {
		case now.Before(since.Add(t.For)):
			wake(since.Add(t.For))
			continue
		case triggered && now.Before(last.Add(t.Cooldown)):
			wake(last.Add(t.Cooldown))
			continue
		case g == nil || g.Unavailable || g.Target >= g.Max:
			continue
		}
		to := min(g.Max, g.Target+t.Nodes(g.Target))
		d.Raises = append(d.Raises, Raise{Group: g.ID, From: g.Target, To: to, Entries: []string{t.Name}})
		g.Target = to
		d.State.LastTrigger[t.Name] = now
		wake(now.Add(t.Cooldown))
	}
	return d
}
