package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// CloudKind is a fault of the cloud's.
type CloudKind string

const (
	// IncreaseSizeError: the cloud refuses a scale-up request.
	IncreaseSizeError CloudKind = "increase-size-error"
	// DeleteNodesError: the cloud refuses to delete a node.
	DeleteNodesError CloudKind = "delete-nodes-error"
	// SlowCall: IncreaseSize or DeleteNodes takes a while, then does its
	// work.
	SlowCall CloudKind = "slow-call"
)

// AllCloudKinds are every kind of cloud fault.
var AllCloudKinds = []CloudKind{IncreaseSizeError, DeleteNodesError, SlowCall}

// CloudFaults fails and slows a cloud provider's IncreaseSize and
// DeleteNodes calls at set rates, from a seeded source per method (so the
// n-th call of a method meets the same fate in every run). Calls that fail
// do nothing, as a cloud API that refuses a request.
type CloudFaults struct {
	// ErrorRate and SlowRate are the shares of calls that fail and that
	// take Slow first.
	ErrorRate, SlowRate float64
	Slow                time.Duration

	seed   uint64
	mu     sync.Mutex
	rngs   map[string]*rand.Rand
	on     bool
	counts map[CloudKind]int
	calls  map[string]int
	// grown is, per group, its target size after each IncreaseSize.
	grown map[string][]Grown
}

// Grown is a group's target size after an IncreaseSize, and when.
type Grown struct {
	At     time.Time
	Target int
}

// NewCloudFaults makes cloud faults seeded with seed, switched on.
func NewCloudFaults(seed uint64, errorRate, slowRate float64, slow time.Duration) *CloudFaults {
	return &CloudFaults{ErrorRate: errorRate, SlowRate: slowRate, Slow: slow, seed: seed, rngs: map[string]*rand.Rand{},
		on: true, counts: map[CloudKind]int{}, calls: map[string]int{}, grown: map[string][]Grown{}}
}

// Wrap wraps a cloud provider; use it with app.WithCloud.
func (f *CloudFaults) Wrap(c cloudprovider.CloudProvider) cloudprovider.CloudProvider {
	return faultyCloud{CloudProvider: c, f: f}
}

// SetEnabled switches faults on or off.
func (f *CloudFaults) SetEnabled(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = on
}

// Counts are the faults injected by kind, and the calls made by method.
func (f *CloudFaults) Counts() (faults map[CloudKind]int, calls map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	faults, calls = map[CloudKind]int{}, map[string]int{}
	for k, v := range f.counts {
		faults[k] = v
	}
	for k, v := range f.calls {
		calls[k] = v
	}
	return faults, calls
}

// MaxTargetSince is the largest target size IncreaseSize gave the group
// since a time, 0 if none.
func (f *CloudFaults) MaxTargetSince(group string, since time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	most := 0
	for _, g := range f.grown[group] {
		if !g.At.Before(since) {
			most = max(most, g.Target)
		}
	}
	return most
}

// String sums the faults up.
func (f *CloudFaults) String() string {
	faults, calls := f.Counts()
	return fmt.Sprintf("IncreaseSize×%d DeleteNodes×%d; %s×%d %s×%d %s×%d", calls["IncreaseSize"], calls["DeleteNodes"],
		IncreaseSizeError, faults[IncreaseSizeError], DeleteNodesError, faults[DeleteNodesError], SlowCall, faults[SlowCall])
}

// before runs ahead of a call: it may sleep, and returns the injected
// error, if any.
func (f *CloudFaults) before(method string, kind CloudKind) error {
	f.mu.Lock()
	f.calls[method]++
	rng := f.rngs[method]
	if rng == nil {
		rng = rand.New(rand.NewPCG(f.seed, uint64(len(method))<<32|uint64(method[0])))
		f.rngs[method] = rng
	}
	slow, fail := false, false
	if f.on {
		slow, fail = rng.Float64() < f.SlowRate, rng.Float64() < f.ErrorRate
	}
	if slow {
		f.counts[SlowCall]++
	}
	if fail {
		f.counts[kind]++
	}
	f.mu.Unlock()
	if slow {
		time.Sleep(f.Slow)
	}
	if fail {
		return errors.New("injected cloud fault: " + string(kind))
	}
	return nil
}

func (f *CloudFaults) recordTarget(g cloudprovider.NodeGroup) {
	n, err := g.TargetSize()
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grown[g.Id()] = append(f.grown[g.Id()], Grown{At: time.Now(), Target: n})
}

type faultyCloud struct {
	cloudprovider.CloudProvider
	f *CloudFaults
}

func (c faultyCloud) NodeGroups() []cloudprovider.NodeGroup {
	groups := c.CloudProvider.NodeGroups()
	out := make([]cloudprovider.NodeGroup, len(groups))
	for i, g := range groups {
		out[i] = faultyGroup{NodeGroup: g, f: c.f}
	}
	return out
}

func (c faultyCloud) NodeGroupForNode(n *corev1.Node) (cloudprovider.NodeGroup, error) {
	g, err := c.CloudProvider.NodeGroupForNode(n)
	if err != nil || g == nil {
		return g, err
	}
	return faultyGroup{NodeGroup: g, f: c.f}, nil
}

type faultyGroup struct {
	cloudprovider.NodeGroup
	f *CloudFaults
}

func (g faultyGroup) IncreaseSize(ctx context.Context, delta int) error {
	if err := g.f.before("IncreaseSize", IncreaseSizeError); err != nil {
		return err
	}
	err := g.NodeGroup.IncreaseSize(ctx, delta)
	g.f.recordTarget(g.NodeGroup)
	return err
}

func (g faultyGroup) DeleteNodes(ctx context.Context, nodes []*corev1.Node) error {
	if err := g.f.before("DeleteNodes", DeleteNodesError); err != nil {
		return err
	}
	return g.NodeGroup.DeleteNodes(ctx, nodes)
}
