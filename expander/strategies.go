package expander

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// random keeps one option, chosen uniformly.
type random struct{}

func (random) Name() string { return RandomName }

func (random) BestOptions(options []Option, ctx *Context) []Option {
	if len(options) <= 1 || ctx == nil {
		return options[:min(1, len(options))]
	}
	return []Option{options[ctx.intN(len(options))]}
}

// mostPods keeps the options that schedule the most pods.
type mostPods struct{}

func (mostPods) Name() string { return MostPodsName }

func (mostPods) BestOptions(options []Option, _ *Context) []Option {
	return keepBest(options, func(o Option) float64 { return float64(len(o.Pods)) }, higher)
}

// leastWaste keeps the options that leave the least of the new nodes'
// capacity unused: wasted cpu fraction plus wasted memory fraction.
type leastWaste struct{}

func (leastWaste) Name() string { return LeastWasteName }

func (leastWaste) BestOptions(options []Option, _ *Context) []Option {
	// Options often offer the same pods: each pod's requests are summed
	// once per choice, not once per option.
	memo := map[*corev1.Pod]requests{}
	return keepBest(options, func(o Option) float64 { return waste(o, memo) }, lower)
}

// Waste is the unused share of cpu plus the unused share of memory of an
// option's new nodes once its pods run there, computed on node capacity as
// Cluster Autoscaler does.
func Waste(o Option) float64 { return waste(o, nil) }

// waste is Waste, the pods' requests kept in memo when it is not nil.
func waste(o Option, memo map[*corev1.Pod]requests) float64 {
	if o.Template == nil || o.NodeCount == 0 {
		return math.Inf(1)
	}
	capacity := o.Template.Status.Capacity
	if len(capacity) == 0 {
		capacity = o.Template.Status.Allocatable
	}
	cpu := float64(capacity.Cpu().MilliValue()) * float64(o.NodeCount)
	mem := float64(capacity.Memory().Value()) * float64(o.NodeCount)
	var reqCPU, reqMem float64
	for _, p := range o.Pods {
		r, ok := memo[p]
		if !ok {
			r = podRequests(p)
			if memo != nil {
				memo[p] = r
			}
		}
		reqCPU += float64(r.cpu)
		reqMem += float64(r.mem)
	}
	waste := 0.0
	if cpu > 0 {
		waste += (cpu - reqCPU) / cpu
	}
	if mem > 0 {
		waste += (mem - reqMem) / mem
	}
	return waste
}

// topologyBalance keeps the options whose zone has the fewest nodes.
type topologyBalance struct{}

func (topologyBalance) Name() string { return TopologyBalanceName }

func (topologyBalance) BestOptions(options []Option, ctx *Context) []Option {
	return keepBest(options, func(o Option) float64 { return float64(ctx.ZoneNodes[zoneOf(o)]) }, lower)
}

// priorityRatio keeps the options whose template's cpu-per-GiB is closest
// (on a log scale, so 2× too much and 2× too little weigh the same) to that
// of the pods already scheduled.
type priorityRatio struct{}

func (priorityRatio) Name() string { return PriorityRatioName }

func (priorityRatio) BestOptions(options []Option, ctx *Context) []Option {
	if ctx.RequestedCPUPerGiB <= 0 {
		return options
	}
	return keepBest(options, func(o Option) float64 { return RatioDistance(o, ctx.RequestedCPUPerGiB) }, lower)
}

// RatioDistance is |log(template cpu-per-GiB / wanted cpu-per-GiB)|.
func RatioDistance(o Option, wanted float64) float64 {
	if o.Template == nil {
		return math.Inf(1)
	}
	a := o.Template.Status.Allocatable
	gib := float64(a.Memory().Value()) / (1 << 30)
	if gib <= 0 || a.Cpu().MilliValue() <= 0 {
		return math.Inf(1)
	}
	ratio := float64(a.Cpu().MilliValue()) / 1000 / gib
	return math.Abs(math.Log(ratio / wanted))
}

// price keeps the options with the lowest price per scheduled pod.
type price struct{}

func (price) Name() string { return PriceName }

func (price) BestOptions(options []Option, ctx *Context) []Option {
	return keepBest(options, func(o Option) float64 {
		p, ok := ctx.NodePrices[o.NodeGroup]
		if !ok || len(o.Pods) == 0 {
			return math.Inf(1)
		}
		return p * float64(o.NodeCount) / float64(len(o.Pods))
	}, lower)
}
