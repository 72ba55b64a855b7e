package expander

import (
	"fmt"
	"strings"
)

// Names of the strategies, as --expander takes them.
const (
	RandomName          = "random"
	MostPodsName        = "most-pods"
	LeastWasteName      = "least-waste"
	PriorityName        = "priority"
	TopologyBalanceName = "topology-balance"
	PriorityRatioName   = "priority-ratio"
	PriceName           = "price"
)

// namedChains are the chains a single --expander name stands for.
var namedChains = map[string][]string{
	RandomName:     {RandomName},
	MostPodsName:   {MostPodsName, RandomName},
	LeastWasteName: {LeastWasteName, RandomName},
	// As in Cluster Autoscaler, equal priorities are a random pick;
	// priority,least-waste asks for more.
	PriorityName:        {PriorityName, RandomName},
	TopologyBalanceName: {TopologyBalanceName, LeastWasteName, RandomName},
	PriorityRatioName:   {PriorityName, PriorityRatioName, LeastWasteName, RandomName},
	PriceName:           {PriceName, LeastWasteName, RandomName},
}

// Chain applies strategies in turn, each breaking the previous one's ties,
// and stops as soon as one option is left.
type Chain struct {
	strategies []Strategy
}

// ParseChain turns an --expander value into a chain. A single name means its
// named chain (priority → random, least-waste → random, ...); a
// comma-separated list is used as given, with random appended last.
func ParseChain(value string) (*Chain, error) {
	parts := strings.Split(value, ",")
	var names []string
	if len(parts) == 1 {
		named, ok := namedChains[strings.TrimSpace(parts[0])]
		if !ok {
			return nil, fmt.Errorf("--expander=%q: unknown expander (want one of %s)", value, strings.Join(knownNames(), ", "))
		}
		names = named
	} else {
		for _, p := range parts {
			name := strings.TrimSpace(p)
			if _, ok := namedChains[name]; !ok {
				return nil, fmt.Errorf("--expander=%q: unknown expander %q (want one of %s)", value, name, strings.Join(knownNames(), ", "))
			}
			names = append(names, name)
		}
		if names[len(names)-1] != RandomName {
			names = append(names, RandomName)
		}
	}
	c := &Chain{}
	for _, n := range names {
		c.strategies = append(c.strategies, newStrategy(n))
	}
	return c, nil
}

func knownNames() []string {
	return []string{RandomName, MostPodsName, LeastWasteName, PriorityName, TopologyBalanceName, PriorityRatioName, PriceName}
}

func newStrategy(name string) Strategy {
	switch name {
	case MostPodsName:
		return mostPods{}
	case LeastWasteName:
		return leastWaste{}
	case PriorityName:
		return priority{}
	case TopologyBalanceName:
		return topologyBalance{}
	case PriorityRatioName:
		return priorityRatio{}
	case PriceName:
		return price{}
	}
	return random{}
}

// Names lists the chain's strategies in order.
func (c *Chain) Names() []string {
	out := make([]string, len(c.strategies))
	for i, s := range c.strategies {
		out[i] = s.Name()
	}
	return out
}

// Decision is the chosen option and how the chain got there.
type Decision struct {
	Best Option
	// Steps says, per strategy applied, how many options it kept.
	Steps []Step
}

// Step is one strategy's effect.
type Step struct {
	Strategy string
	Kept     []string
}

// Choose picks one option. options must not be empty.
func (c *Chain) Choose(options []Option, ctx *Context) Decision {
	var d Decision
	for _, s := range c.strategies {
		if len(options) <= 1 {
			break
		}
		options = s.BestOptions(options, ctx)
		kept := make([]string, len(options))
		for i, o := range options {
			kept[i] = o.NodeGroup
		}
		d.Steps = append(d.Steps, Step{Strategy: s.Name(), Kept: kept})
	}
	d.Best = options[0]
	return d
}
