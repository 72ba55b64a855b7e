// Package expander chooses which node group to grow when several could help
// the pending pods. Each strategy keeps the options it likes best; a chain
// of strategies narrows them down, and random breaks the last tie.
//
// Strategies are pure functions over the options and a Context of plain
// data gathered by the node loop (zone sizes, prices, priorities).
package expander

import (
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
)

// Option is one possible scale-up: add NodeCount nodes to NodeGroup, which
// makes Pods schedulable.
type Option struct {
	NodeGroup string
	NodeCount int
	Pods      []*corev1.Pod
	// Template is the group's template node.
	Template *corev1.Node
}

// Context is what strategies may consult besides the options.
type Context struct {
	// ZoneNodes counts the cluster's nodes (registered and upcoming) per
	// zone, for topology-balance.
	ZoneNodes map[string]int
	// RequestedCPUPerGiB is the cpu (in cores) per GiB of memory requested
	// by all scheduled pods, for priority-ratio. 0 means unknown.
	RequestedCPUPerGiB float64
	// Priorities is the priority expander's configuration; nil when there
	// is none (or it is broken).
	Priorities *Priorities
	// NodePrices is each group's price per node-hour, for price.
	NodePrices map[string]float64
	// Seed seeds the generator that breaks ties, so that a decision is
	// reproducible from its input: the same seed and options give the same
	// choices.
	Seed uint64
	// rnd is the generator, made from Seed at the first tie.
	rnd *rand.Rand
}

// Fork is a copy of c whose tie-breaking starts again from Seed: one per
// decision, so a decision's choices depend on its input only.
func (c *Context) Fork() *Context {
	if c == nil {
		return &Context{}
	}
	out := *c
	out.rnd = nil
	return &out
}

// intN draws from [0, n) with the context's generator.
func (c *Context) intN(n int) int {
	if c.rnd == nil {
		c.rnd = rand.New(rand.NewPCG(c.Seed, c.Seed))
	}
	return c.rnd.IntN(n)
}

// Strategy keeps the options it likes best. Given a non-empty list it
// returns a non-empty sublist.
type Strategy interface {
	Name() string
	BestOptions(options []Option, ctx *Context) []Option
}

// keepBest returns the options whose score equals the best one, where
// better(a, b) tells whether score a beats score b.
func keepBest(options []Option, score func(Option) float64, better func(a, b float64) bool) []Option {
	if len(options) == 0 {
		return options
	}
	scores := make([]float64, len(options))
	best := 0
	for i, o := range options {
		scores[i] = score(o)
		if better(scores[i], scores[best]) {
			best = i
		}
	}
	var out []Option
	for i, o := range options {
		if !better(scores[best], scores[i]) && !better(scores[i], scores[best]) {
			out = append(out, o)
		}
	}
	return out
}

func lower(a, b float64) bool  { return a < b-1e-9 }
func higher(a, b float64) bool { return a > b+1e-9 }

// zoneOf is the template's zone label.
func zoneOf(o Option) string {
	if o.Template == nil {
		return ""
	}
	return o.Template.Labels[corev1.LabelTopologyZone]
}
