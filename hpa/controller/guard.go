package controller

import (
	"context"
	"fmt"
	"runtime/debug"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// ReasonInternalError is the ScalingActive reason and the event reason of
// an autoscaler whose sync failed inside tidal (a panic): its replicas are
// held, and the next sync tries again.
const ReasonInternalError = "InternalError"

// The calculation is total (no input makes it panic), so what follows is a
// last resort: one autoscaler's failure must never take the process down,
// and with it both loops and every other autoscaler.

// recovered turns a panic of the sync of key into an error, counts it,
// logs it with its stack and, when the autoscaler is known (s != nil),
// records a warning event on it.
func (c *Controller) recovered(ctx context.Context, key string, s *syncRun, r any) error {
	c.cfg.Observer.panicked()
	err := fmt.Errorf("internal error while syncing %s: %v", key, r)
	klog.FromContext(ctx).Error(err, "Pod autoscaler sync failed; its replicas are held", "podAutoscaler", key, "stack", string(debug.Stack()))
	if s != nil {
		s.event(corev1.EventTypeWarning, ReasonInternalError, internalErrorMessage(r))
	}
	return err
}

// internalErrorMessage is the message of the event and the condition.
func internalErrorMessage(r any) string {
	return fmt.Sprintf("tidal failed to sync this autoscaler and holds its replicas: %v (details in tidal's log)", r)
}

// runGuarded runs the sync's decision and action; a panic there becomes
// ScalingActive=False with reason InternalError, so the status still says
// what happened.
func (s *syncRun) runGuarded(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = s.c.recovered(ctx, s.a.Key, s, r)
			s.setConditions(hpa.Condition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
				Reason: ReasonInternalError, Message: internalErrorMessage(r)})
		}
	}()
	return s.run(ctx)
}
