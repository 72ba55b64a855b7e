package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// heartbeatKey is a queue item no autoscaler can be (object names hold no
// spaces). Every sync period it joins the queue; the worker that takes it
// notes the time. A pod loop whose workers are all stuck, or that stopped,
// stops noting it, and /healthz says so.
const heartbeatKey = " heartbeat"

// LastActivity is when a worker last took the heartbeat from the queue, or
// when Run started.
func (c *Controller) LastActivity() time.Time { return time.Unix(0, c.lastActivity.Load()) }

func (c *Controller) beat() { c.lastActivity.Store(c.clock.Now().UnixNano()) }

// heartbeat queues the heartbeat every sync period until ctx ends.
func (c *Controller) heartbeat(ctx context.Context) {
	wait.Until(func() { c.queue.Add(heartbeatKey) }, c.cfg.SyncPeriod, ctx.Done())
}
