package core

import (
	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
)

// apply brings what the actuator did into the loop: the observation's
// sizes, the cluster state's backoff and scale-up record, the last
// scale-up time, the iteration's failed groups. It is the one place that
// does, for scale-ups, scheduled raises, allocation triggers and cancels
// alike. For a refusal it returns the backoff's reason.
func (d *Decider) apply(o *observation, report *Iteration, r act.Result) (refused string) {
	now := d.clock.Now()
	g := o.group(r.Group)
	switch {
	case r.Refused != nil:
		d.state.BackOff(r.Group, now, &cloudprovider.InstanceErrorInfo{
			ErrorClass: cloudprovider.OtherErrorClass, ErrorCode: "IncreaseSizeFailed", ErrorMessage: r.Refused.Error()})
		report.failedGroups = append(report.failedGroups, r.Group)
		if why := d.state.Group(r.Group).BackoffReason; why != "" {
			return why
		}
		return "IncreaseSizeFailed"
	case r.Grown > 0:
		g.target += r.Grown
		report.scaledUp = true
		d.mem.lastScaleUp = now
		d.state.RecordScaleUp(r.Group, now, r.Grown)
	}
	if s := r.Sizes; s != nil && g != nil {
		g.target, g.instances = s.Target, s.Instances
		if s.TargetErr != nil {
			g.problem = "cannot read target size after cancelling: " + s.TargetErr.Error()
		}
		if s.InstancesErr != nil {
			g.problem = "cannot list instances after cancelling: " + s.InstancesErr.Error()
		}
	}
	return ""
}
