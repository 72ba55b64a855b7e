package consolidate

import (
	"fmt"
	"slices"
	"time"
)

// State is what consolidation carries from one iteration to the next: the
// replacement whose new nodes were requested (nil: none), and until when
// a new one waits after one failed. The loop keeps it and hands it back.
type State struct {
	InFlight *InFlight
	// BackoffUntil: no replacement starts before; Failures in a row
	// double the wait.
	BackoffUntil time.Time
	Failures     int
	// Finishing are the replacements that settled, until their old nodes
	// are gone (Finished).
	Finishing []Finishing
}

// InFlight is a replacement whose new nodes were requested.
type InFlight struct {
	Replacement
	Requested time.Time
	// Before are the new group's nodes when they were requested: the
	// group's other nodes are the replacement's.
	Before []string
	// Draining is when the old nodes went to their drains (zero: the new
	// nodes are still awaited), New the new nodes that were Ready then.
	// Until the replacement settles (Settle) both stay held: scale-down
	// would otherwise find a new node empty while the evicted pods wait
	// for the scheduler, and remove it.
	Draining time.Time
	New      []string
}

// NodeState is a node of the new group as the iteration sees it: ready
// once its Ready condition is True and no startup taint is left.
type NodeState struct {
	Name  string
	Ready bool
}

// Step is what to do with a replacement in flight.
type Step string

// Steps.
const (
	// StepWait: the new nodes are not all Ready yet.
	StepWait Step = "Wait"
	// StepDrain: they are; the old nodes may be tainted and drained once
	// their pods are found to fit (Recheck).
	StepDrain Step = "Drain"
	// StepTimedOut: the new nodes did not come within the provision
	// timeout; nothing is drained, the attempt backs off.
	StepTimedOut Step = "TimedOut"
	// StepAbandon: an old node went meanwhile; nothing is drained.
	StepAbandon Step = "Abandon"
)

// Progress is the step for a replacement in flight, with the new nodes
// that are Ready and why.
type Progress struct {
	Step Step
	New  []string
	Why  string
}

// Advance says what to do with f now: groupNodes are the new group's
// nodes, present tells whether an old node still exists.
func Advance(f InFlight, groupNodes []NodeState, present func(string) bool, now time.Time, timeout time.Duration) Progress {
	for _, o := range f.Old {
		if !present(o.Node) {
			return Progress{Step: StepAbandon, Why: fmt.Sprintf("old node %s is gone", o.Node)}
		}
	}
	var ready []string
	for _, n := range groupNodes {
		if n.Ready && !slices.Contains(f.Before, n.Name) {
			ready = append(ready, n.Name)
		}
	}
	slices.Sort(ready)
	switch {
	case len(ready) >= f.Count:
		return Progress{Step: StepDrain, New: ready}
	case !now.Before(f.Requested.Add(timeout)):
		return Progress{Step: StepTimedOut, New: ready, Why: fmt.Sprintf("%d of %d new node(s) of %s Ready after %s",
			len(ready), f.Count, f.Group, timeout)}
	}
	return Progress{Step: StepWait, New: ready}
}

// Backoff is how long a failed replacement holds the next one back: the
// base doubled per failure in a row, at most max.
func Backoff(failures int, base, maxWait time.Duration) time.Duration {
	d := base
	for i := 1; i < failures && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// Failed is s after a replacement failed at now.
func (s State) Failed(now time.Time, base, maxWait time.Duration) State {
	s.InFlight = nil
	s.Failures++
	s.BackoffUntil = now.Add(Backoff(s.Failures, base, maxWait))
	return s
}

// Drain is s once f's old nodes went to their drains at now, onto the new
// nodes.
func (s State) Drain(now time.Time, newNodes []string) State {
	f := *s.InFlight
	f.Draining, f.New = now, slices.Clone(newNodes)
	s.InFlight, s.Failures = &f, 0
	return s
}

// Done is s after the replacement in flight settled at now: nothing is
// held any more, and it is finishing until its old nodes are gone.
func (s State) Done(now time.Time) State {
	if f := s.InFlight; f != nil {
		s.Finishing = append(slices.Clone(s.Finishing), Finishing{Kind: f.Kind, Old: f.Nodes(), Saving: f.Saving, Settled: now})
	}
	s.InFlight, s.Failures = nil, 0
	return s
}

// Protected are the nodes scale-down must leave while f is in flight: the
// new group's nodes that came after the request (the replacement's
// capacity) and the old nodes (consolidation drains them).
func (f *InFlight) Protected(groupNodes []string) map[string]bool {
	out := map[string]bool{}
	if f == nil {
		return out
	}
	for _, o := range f.Old {
		out[o.Node] = true
	}
	if !f.Draining.IsZero() {
		for _, n := range f.New {
			out[n] = true
		}
		return out
	}
	for _, n := range groupNodes {
		if !slices.Contains(f.Before, n) {
			out[n] = true
		}
	}
	return out
}
