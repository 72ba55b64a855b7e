package aws

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// groupLaunchTemplate is the launch template a group launches from, nil
// for a launch configuration.
func groupLaunchTemplate(g *astypes.AutoScalingGroup) *astypes.LaunchTemplateSpecification {
	if p := g.MixedInstancesPolicy; p != nil && p.LaunchTemplate != nil {
		return p.LaunchTemplate.LaunchTemplateSpecification
	}
	return g.LaunchTemplate
}

// allowedTypes are the instance types the group launches: a mixed
// instances policy's overrides, else the launch spec's type; nil when the
// group selects types by attributes (any type may do).
func allowedTypes(g *astypes.AutoScalingGroup, spec launchSpec) map[string]bool {
	out := map[string]bool{}
	if p := g.MixedInstancesPolicy; p != nil && p.LaunchTemplate != nil {
		for _, o := range p.LaunchTemplate.Overrides {
			if o.InstanceRequirements != nil {
				return nil
			}
			if t := aws.ToString(o.InstanceType); t != "" {
				out[t] = true
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if spec.InstanceType == "" {
		return nil
	}
	out[spec.InstanceType] = true
	return out
}

// driftOf says, per InService instance, how it differs from what its group
// launches now: another launch template or launch configuration, another
// launch template version (version: the number the group's resolves to,
// "" when unknown), an instance type the group no longer launches. What
// cannot be known (a version not given as a number) is no drift.
func driftOf(g *astypes.AutoScalingGroup, version string, types map[string]bool) map[string]string {
	out := map[string]string{}
	want := groupLaunchTemplate(g)
	for _, in := range g.Instances {
		if in.LifecycleState != astypes.LifecycleStateInService {
			continue
		}
		id := aws.ToString(in.InstanceId)
		if why := launchDrift(want, aws.ToString(g.LaunchConfigurationName), version, in); why != "" {
			out[id] = why
			continue
		}
		if t := aws.ToString(in.InstanceType); types != nil && t != "" && !types[t] {
			out[id] = fmt.Sprintf("instance type %s, which the group no longer launches", t)
		}
	}
	return out
}

func launchDrift(want *astypes.LaunchTemplateSpecification, lc, version string, in astypes.Instance) string {
	have := in.LaunchTemplate
	switch {
	case want == nil && lc != "" && aws.ToString(in.LaunchConfigurationName) != "" && aws.ToString(in.LaunchConfigurationName) != lc:
		return fmt.Sprintf("launch configuration %s, the group launches %s", aws.ToString(in.LaunchConfigurationName), lc)
	case want == nil || have == nil:
		if want != nil && aws.ToString(in.LaunchConfigurationName) != "" {
			return fmt.Sprintf("launch configuration %s, the group launches a launch template", aws.ToString(in.LaunchConfigurationName))
		}
		return ""
	case differ(aws.ToString(have.LaunchTemplateId), aws.ToString(want.LaunchTemplateId)) ||
		differ(aws.ToString(have.LaunchTemplateName), aws.ToString(want.LaunchTemplateName)):
		return fmt.Sprintf("launch template %s, the group launches %s", ltName(have), ltName(want))
	}
	v := aws.ToString(have.Version)
	if _, err := strconv.Atoi(v); err == nil && version != "" && v != version {
		return fmt.Sprintf("launch template %s version %s, the group launches version %s", ltName(want), v, version)
	}
	return ""
}

// differ: both known and not equal.
func differ(a, b string) bool { return a != "" && b != "" && a != b }

func ltName(s *astypes.LaunchTemplateSpecification) string {
	if id := aws.ToString(s.LaunchTemplateId); id != "" {
		return id
	}
	return aws.ToString(s.LaunchTemplateName)
}

// launchedVersion is the number the group's launch template version
// resolves to ($Latest, $Default read, and cached, as for templates); ""
// when it cannot be read.
func (c *launchTemplateCache) launchedVersion(ctx context.Context, api Clients, g *astypes.AutoScalingGroup, now time.Time) string {
	spec := groupLaunchTemplate(g)
	if spec == nil {
		return ""
	}
	k := keyOf(spec)
	if k.numbered() {
		return k.version
	}
	if _, err := c.templateData(ctx, api.EC2, k, now); err != nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.lts[k].number; n > 0 {
		return strconv.FormatInt(n, 10)
	}
	return ""
}

// Drifted says, by providerID, how the InService instances of every group
// differ from what their group launches now, as of the last refresh
// (cloudprovider.DriftDetector).
func (c *Cloud) Drifted() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, g := range c.groups {
		for _, in := range g.st.instances {
			if why := g.st.drift[in.id]; why != "" {
				out[ProviderID(in.zone, in.id)] = why
			}
		}
	}
	return out
}

// imageDrift says, per InService instance, that its AMI (have, by
// instance id) is not the one its group launches now (want). An AMI not
// known on either side is no drift.
func imageDrift(g *astypes.AutoScalingGroup, have map[string]string, want string) map[string]string {
	out := map[string]string{}
	for _, in := range g.Instances {
		id := aws.ToString(in.InstanceId)
		if in.LifecycleState != astypes.LifecycleStateInService || !differ(have[id], want) {
			continue
		}
		out[id] = fmt.Sprintf("ami %s, the group launches %s", have[id], want)
	}
	return out
}
