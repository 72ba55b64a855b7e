// Package clusterstate keeps what the node loop must remember between
// iterations: which requested nodes are still coming, which groups failed
// to grow and are backed off, and whether the cluster is healthy enough to
// act on. It holds no clients: the loop feeds it observations and a clock
// time, and carries out the actions it returns.
package clusterstate

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// Options are the timers and thresholds of the cluster state.
type Options struct {
	// MaxNodeProvisionTime is how long a requested node may take to
	// register and become Ready before the request counts as failed.
	MaxNodeProvisionTime time.Duration
	// MaxNodeStartupTime is how long a registered node may take to become
	// Ready before it counts as unready rather than starting; zero takes
	// MaxNodeProvisionTime.
	MaxNodeStartupTime time.Duration
	// InitialBackoff, MaxBackoff: a failing group is skipped for
	// InitialBackoff, doubling on each failure up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// BackoffReset: after this long without failure the next backoff
	// starts from InitialBackoff again.
	BackoffReset time.Duration
	// MaxTotalUnreadyPercentage and OkTotalUnreadyCount: the cluster is
	// unhealthy when more than max(OkTotalUnreadyCount, percentage of
	// nodes) registered nodes are unready.
	MaxTotalUnreadyPercentage float64
	OkTotalUnreadyCount       int
}

// GroupObservation is what the loop saw of a group in one iteration.
type GroupObservation struct {
	ID        string
	Target    int
	Instances []cloudprovider.Instance
	// Nodes maps providerIDs of the group's registered nodes to whether
	// they are Ready.
	Nodes map[string]NodeObservation
	// MaxNodeProvisionTime is the group's own provision time (its
	// maxnodeprovisiontime option); zero takes Options.MaxNodeProvisionTime.
	MaxNodeProvisionTime time.Duration
}

// provisionTime is how long the group's requested nodes may take.
func (t *Tracker) provisionTime(o GroupObservation) time.Duration {
	if o.MaxNodeProvisionTime > 0 {
		return o.MaxNodeProvisionTime
	}
	return t.opts.MaxNodeProvisionTime
}

// NodeObservation is a registered node. Taints.Observe makes one from a
// Node.
type NodeObservation struct {
	Name string
	// Ready is set when the node can run pods now; otherwise NotReady says
	// why.
	Ready    bool
	NotReady string
	Created  time.Time
}

// Tracker is the cluster state. It is not safe for concurrent use.
type Tracker struct {
	opts   Options
	groups map[string]*groupState
	health Health
}

type groupState struct {
	// firstSeen is when each instance was first seen unregistered or
	// unready.
	firstSeen map[string]time.Time
	backoff   backoff
	view      GroupView
	// lastScaleUp and lastScaleUpNodes outlive views.
	lastScaleUp      time.Time
	lastScaleUpNodes int
}

type backoff struct {
	until       time.Time
	duration    time.Duration
	lastFailure time.Time
	err         *cloudprovider.InstanceErrorInfo
}

// New returns an empty tracker.
func New(opts Options) *Tracker {
	return &Tracker{opts: opts, groups: map[string]*groupState{}}
}

func (t *Tracker) group(id string) *groupState {
	g := t.groups[id]
	if g == nil {
		g = &groupState{firstSeen: map[string]time.Time{}}
		t.groups[id] = g
	}
	return g
}

// GroupView is the tracker's summary of a group after Update.
type GroupView struct {
	ID     string
	Target int
	// Registered counts the group's nodes; Ready those that are ready (see
	// NodeObservation: a startup taint makes a node not ready).
	Registered, Ready int
	// Upcoming counts requested nodes not yet registered and ready (and not
	// failed): the node loop treats them as template copies. Starting
	// names those of them registered (not yet ready), in name order.
	Upcoming int
	Starting []string
	// BackedOff is set while the group must not grow.
	BackedOff     bool
	BackoffUntil  time.Time
	BackoffReason string
	// LastFailure describes the last failed scale-up, if any.
	LastFailure *cloudprovider.InstanceErrorInfo
	// LastScaleUp and LastScaleUpNodes describe the last successful
	// request for nodes.
	LastScaleUp      time.Time
	LastScaleUpNodes int
}

// Cancel asks the loop to drop requested nodes that will never come:
// failed launches and ones past the provision time.
type Cancel struct {
	Group     string
	Instances []cloudprovider.Instance
	// Registered is set for instances that have a Node (unready past the
	// provision time): those must be deleted, not just cancelled.
	Registered []string
	// Failed is set when the instances failed to launch (they never
	// existed); otherwise they are late and may exist without a Node.
	Failed bool
	Reason string
}

// Update takes one iteration's observations and returns the requests to
// cancel. Failed groups are backed off here.
func (t *Tracker) Update(now time.Time, obs []GroupObservation) []Cancel {
	var cancels []Cancel
	seen := map[string]bool{}
	for _, o := range obs {
		seen[o.ID] = true
		if c := t.updateGroup(now, o); c != nil {
			cancels = append(cancels, *c)
		}
	}
	for id := range t.groups {
		if !seen[id] {
			delete(t.groups, id)
		}
	}
	return cancels
}

func (t *Tracker) updateGroup(now time.Time, o GroupObservation) *Cancel {
	g := t.group(o.ID)
	v := GroupView{ID: o.ID, Target: o.Target}
	var failed, late []cloudprovider.Instance
	var lateNodes []string
	live := map[string]bool{}
	var failure *cloudprovider.InstanceErrorInfo
	limit := t.provisionTime(o)
	for _, in := range o.Instances {
		node, registered := o.Nodes[in.Id]
		if registered {
			v.Registered++
			if node.Ready {
				v.Ready++
				continue
			}
		}
		if in.Status != nil && in.Status.State == cloudprovider.InstanceDeleting {
			continue
		}
		if in.Status != nil && in.Status.ErrorInfo != nil {
			failed = append(failed, in)
			failure = in.Status.ErrorInfo
			continue
		}
		live[in.Id] = true
		first, ok := g.firstSeen[in.Id]
		if !ok {
			first = now
			g.firstSeen[in.Id] = now
		}
		if now.Sub(first) > limit {
			late = append(late, in)
			if registered {
				lateNodes = append(lateNodes, node.Name)
			}
			continue
		}
		v.Upcoming++
		if registered {
			v.Starting = append(v.Starting, node.Name)
		}
	}
	slices.Sort(v.Starting)
	// Requests the cloud has not turned into instances yet count as
	// upcoming too.
	if missing := o.Target - len(o.Instances); missing > 0 {
		v.Upcoming += missing
	}
	for id := range g.firstSeen {
		if !live[id] {
			delete(g.firstSeen, id)
		}
	}
	var cancel *Cancel
	switch {
	case len(failed) > 0:
		t.backOff(g, now, failure)
		cancel = &Cancel{Group: o.ID, Instances: failed, Failed: true, Reason: describe(failure)}
	case len(late) > 0:
		info := &cloudprovider.InstanceErrorInfo{ErrorClass: cloudprovider.OtherErrorClass, ErrorCode: "ProvisionTimeout",
			ErrorMessage: fmt.Sprintf("%d node(s) did not register and become Ready within %v", len(late), limit)}
		t.backOff(g, now, info)
		cancel = &Cancel{Group: o.ID, Instances: late, Registered: lateNodes, Reason: describe(info)}
	}
	v.BackedOff = now.Before(g.backoff.until)
	v.BackoffUntil = g.backoff.until
	v.LastFailure = g.backoff.err
	if v.BackedOff {
		v.BackoffReason = fmt.Sprintf("in backoff after failed scale-up (%s) until %s", describe(g.backoff.err), g.backoff.until.UTC().Format(time.RFC3339))
	}
	v.LastScaleUp, v.LastScaleUpNodes = g.lastScaleUp, g.lastScaleUpNodes
	g.view = v
	return cancel
}

// RecordScaleUp notes a successful request for nodes.
func (t *Tracker) RecordScaleUp(id string, now time.Time, nodes int) {
	g := t.group(id)
	g.lastScaleUp, g.lastScaleUpNodes = now, nodes
	g.view.LastScaleUp, g.view.LastScaleUpNodes = now, nodes
	g.view.Target += nodes
	g.view.Upcoming += nodes
}

// BackOff backs a group off after a failure seen outside Update, such as
// IncreaseSize returning an error.
func (t *Tracker) BackOff(id string, now time.Time, info *cloudprovider.InstanceErrorInfo) {
	g := t.group(id)
	t.backOff(g, now, info)
	g.view.BackedOff = true
	g.view.BackoffUntil = g.backoff.until
	g.view.LastFailure = info
	g.view.BackoffReason = fmt.Sprintf("in backoff after failed scale-up (%s) until %s", describe(info), g.backoff.until.UTC().Format(time.RFC3339))
}

func (t *Tracker) backOff(g *groupState, now time.Time, info *cloudprovider.InstanceErrorInfo) {
	d := t.opts.InitialBackoff
	if !g.backoff.lastFailure.IsZero() && now.Sub(g.backoff.lastFailure) < t.opts.BackoffReset && g.backoff.duration > 0 {
		if now.Before(g.backoff.until) {
			// Still backed off: the same failure seen again.
			g.backoff.err = info
			return
		}
		d = min(2*g.backoff.duration, t.opts.MaxBackoff)
	}
	g.backoff = backoff{until: now.Add(d), duration: d, lastFailure: now, err: info}
}

func describe(info *cloudprovider.InstanceErrorInfo) string {
	if info == nil {
		return "unknown error"
	}
	class := "error"
	if info.ErrorClass == cloudprovider.OutOfResourcesErrorClass {
		class = "out of resources"
	}
	return fmt.Sprintf("%s %s: %s", class, info.ErrorCode, info.ErrorMessage)
}

// Group returns the view of a group after the last Update.
func (t *Tracker) Group(id string) GroupView {
	if g, ok := t.groups[id]; ok {
		return g.view
	}
	return GroupView{ID: id}
}

// Groups returns every group's view, by ID.
func (t *Tracker) Groups() []GroupView {
	out := make([]GroupView, 0, len(t.groups))
	for _, g := range t.groups {
		out = append(out, g.view)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
