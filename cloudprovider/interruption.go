package cloudprovider

import (
	"context"
	"time"
)

// Kinds of interruption: how the cloud said an instance goes away.
const (
	// SpotInterruption: the cloud reclaims a spot instance at Deadline
	// (two minutes after the warning on EC2).
	SpotInterruption = "spot-interruption"
	// RebalanceRecommendation: a spot instance is at raised risk of being
	// reclaimed; no deadline.
	RebalanceRecommendation = "rebalance-recommendation"
	// ScheduledChange: maintenance (a retirement, a reboot) is scheduled
	// to start at Deadline.
	ScheduledChange = "scheduled-change"
	// StateChange: the instance is stopping, stopped, shutting down or
	// terminated now.
	StateChange = "state-change"
)

// Interruption is the cloud's word that instances are going away on
// their own: not a scale-down tidal decided.
type Interruption struct {
	// ID names the message it came in; Done takes it.
	ID string
	// Kind is one of the kinds above.
	Kind string
	// Instances are the instance ids concerned: the last path element of
	// their nodes' providerIDs.
	Instances []string
	// Time is when the cloud sent it; Deadline when the instances go
	// (zero: no deadline).
	Time, Deadline time.Time
	// Detail says more, for logs and events: the instance action, state
	// or event type.
	Detail string
}

// Received is what an InterruptionSource has received since it was last
// asked: the interruptions, and the messages it dropped, counted by why
// ("unknown": a kind of event tidal does not act on, "malformed": not an
// event it can read).
type Received struct {
	Interruptions []Interruption
	Dropped       map[string]int
}

// InterruptionSource is a queue of interruptions (AWS: EventBridge events
// in an SQS queue). It is not part of Cluster Autoscaler's interface.
type InterruptionSource interface {
	// Run receives until ctx ends, calling notify (which must return at
	// once) whenever something was received.
	Run(ctx context.Context, notify func())
	// Take returns what was received since the last Take.
	Take() Received
	// Done deletes the message of an interruption that was acted on; an
	// interruption not Done comes back after a while.
	Done(ctx context.Context, id string) error
}

// InterruptionNotifier is implemented by providers that can be told of
// interruptions (AWS with --aws-interruption-queue).
type InterruptionNotifier interface {
	// Interruptions is the source, nil when none is configured.
	Interruptions() InterruptionSource
}

// DriftDetector is implemented by providers that know when a node no
// longer matches what its group launches (AWS: another launch template or
// version, an instance type the group no longer launches, another AMI).
type DriftDetector interface {
	// Drifted says how each drifted node differs, by providerID.
	Drifted() map[string]string
}
