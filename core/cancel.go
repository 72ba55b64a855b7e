package core

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
)

// cancel has the actuator drop requested nodes that will never come:
// failed launches are cancelled (the target shrinks), and nodes that
// registered but never became Ready within the provision time are deleted.
func (d *Decider) cancel(ctx context.Context, o *observation, report *Iteration, c clusterstate.Cancel) {
	g := o.group(c.Group)
	if g == nil {
		return
	}
	var registered []*corev1.Node
	for _, name := range c.Registered {
		if n, err := d.nodes.Get(name); err == nil {
			registered = append(registered, n)
		}
	}
	d.apply(o, report, d.actuator.Cancel(ctx, act.Cancel{Cancel: c, Group: g.group, Nodes: registered,
		Waiting: d.waiters.waitingFor(c.Group, o.pending), SinceReported: d.launchErrors.sinceReported(c)}))
}

// launchErrors are the node groups whose failed launches the cloud told
// of, and when, for the log.
type launchErrors struct {
	clock   clock.Clock
	byGroup sync.Map
}

// reported notes that the cloud told of failed launches of group.
func (e *launchErrors) reported(group string) { e.byGroup.Store(group, e.clock.Now()) }

// sinceReported is, for failed launches the cloud told of, how long ago
// it did (zero: it did not), for the log: the delay from the cloud's
// report to the loop acting on it.
func (e *launchErrors) sinceReported(c clusterstate.Cancel) time.Duration {
	at, ok := e.byGroup.LoadAndDelete(c.Group)
	if !c.Failed || !ok {
		return 0
	}
	return e.clock.Since(at.(time.Time))
}

func (o *observation) group(id string) *groupObservation {
	for _, g := range o.groups {
		if g.group.Id() == id {
			return g
		}
	}
	return nil
}

// capacity is what one new node of the group can hold: its template's
// allocatable (none without a template).
func (g *groupObservation) capacity() corev1.ResourceList {
	if g.template == nil || g.template.Node == nil {
		return nil
	}
	return g.template.Node.Status.Allocatable
}
