package awstest

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Lifecycle states of Auto Scaling instances the emulator uses.
const (
	StatePending     = "Pending"
	StateInService   = "InService"
	StateTerminating = "Terminating"
	StateTerminated  = "Terminated"
	StateStandby     = "Standby"
)

// Scaling activity status codes.
const (
	ActivityInProgress = "InProgress"
	ActivitySuccessful = "Successful"
	ActivityFailed     = "Failed"
)

// GroupSpec describes an Auto Scaling Group to create.
type GroupSpec struct {
	Name              string
	MinSize           int
	MaxSize           int
	DesiredCapacity   int
	AvailabilityZones []string
	// Subnets become the group's VPCZoneIdentifier.
	Subnets                 []string
	LaunchTemplate          *LaunchTemplateRef
	MixedInstancesPolicy    *MixedInstancesPolicy
	LaunchConfigurationName string
	Tags                    map[string]string
}

// LaunchTemplateRef names a launch template and its version ("$Latest",
// "$Default" or a number), by id or by name.
type LaunchTemplateRef struct {
	ID      string
	Name    string
	Version string
}

// MixedInstancesPolicy is a launch template with instance type overrides.
type MixedInstancesPolicy struct {
	LaunchTemplate LaunchTemplateRef
	Overrides      []Override
	// OnDemandBaseCapacity and OnDemandPercentageAboveBaseCapacity are
	// the instances distribution; nil percentage means AWS's default, 100
	// (all on-demand).
	OnDemandBaseCapacity                int
	OnDemandPercentageAboveBaseCapacity *int
}

// Override is one entry of a mixed instances policy: an instance type or
// instance requirements (attribute-based selection).
type Override struct {
	InstanceType string
	Requirements *InstanceRequirements
}

// InstanceRequirements is the subset of attribute-based instance type
// selection the emulator keeps.
type InstanceRequirements struct {
	VCPUMin, VCPUMax           int
	MemoryMiBMin, MemoryMiBMax int
}

// LaunchTemplate is a launch template with its versions; version numbers
// start at 1.
type LaunchTemplate struct {
	ID             string
	Name           string
	Versions       []LaunchTemplateData
	DefaultVersion int
}

// LaunchTemplateData is what a launch template version says about the
// instances it launches.
type LaunchTemplateData struct {
	InstanceType string
	ImageID      string
	// RootVolumeGiB is the size of the first block device mapping.
	RootVolumeGiB int
	Requirements  *InstanceRequirements
	// Spot sets the instance market options' market type to spot.
	Spot bool
}

// LaunchConfiguration is a (legacy) launch configuration.
type LaunchConfiguration struct {
	Name          string
	InstanceType  string
	ImageID       string
	RootVolumeGiB int
}

// Instance is one EC2 instance of a group as the emulator sees it.
type Instance struct {
	ID           string
	Group        string
	Zone         string
	InstanceType string
	// LaunchTemplateVersion is the version of the group's launch template
	// it was launched from, as a number ("" without a launch template).
	LaunchTemplateVersion string
	// ImageID is the AMI it was launched from: its launch template's,
	// an SSM parameter's value for resolve:ssm:<name>, as of the launch.
	ImageID        string
	PrivateDNSName string
	LifecycleState string
	HealthStatus   string
	LaunchTime     time.Time
	readyAt        time.Time
	terminateAt    time.Time
}

// ProviderID is the id the instance's Node carries: aws:///<zone>/<id>.
func (i Instance) ProviderID() string { return "aws:///" + i.Zone + "/" + i.ID }

// Activity is a scaling activity of a group.
type Activity struct {
	ID            string
	Group         string
	Description   string
	Cause         string
	StartTime     time.Time
	EndTime       time.Time
	StatusCode    string
	StatusMessage string
	Progress      int
	instanceID    string
}

// Group is a snapshot of an Auto Scaling Group.
type Group struct {
	GroupSpec
	Instances []Instance
	// Activities are newest first, as DescribeScalingActivities returns
	// them.
	Activities []Activity
	Created    time.Time
}

// LaunchFailure makes a group's launches fail with a scaling activity in
// state Failed, as EC2 does when it has no capacity.
type LaunchFailure struct {
	// Code is the EC2 error code, e.g. InsufficientInstanceCapacity. It
	// is written into the activity's status message as EC2 does for
	// fleets ("Could not launch On-Demand Instances. <Code> - <Message>").
	// Empty leaves the message as it is.
	Code    string
	Message string
}

// InsufficientCapacity is the launch failure of a stock-out.
func InsufficientCapacity(instanceType, zone string) LaunchFailure {
	return LaunchFailure{
		Code: "InsufficientInstanceCapacity",
		Message: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). "+
			"Our system will be working on provisioning additional capacity.", instanceType, zone),
	}
}

func (f LaunchFailure) statusMessage() string {
	msg := strings.TrimSuffix(f.Message, ".") + ". Launching EC2 instance failed."
	if f.Code == "" {
		return msg
	}
	return "Could not launch On-Demand Instances. " + f.Code + " - " + msg
}

// group is the emulator's state of one Auto Scaling Group.
type group struct {
	spec        GroupSpec
	created     time.Time
	instances   []*Instance
	activities  []*Activity // oldest first
	failure     *LaunchFailure
	lastFailure time.Time
	// attempt is a launch that will fail, still in progress.
	attempt *failingAttempt
}

// failingAttempt is a launch attempt that fails at failAt with failure.
type failingAttempt struct {
	activity *Activity
	failAt   time.Time
	failure  LaunchFailure
}

func (g *group) snapshot() Group {
	out := Group{GroupSpec: g.spec, Created: g.created}
	out.Tags = copyMap(g.spec.Tags)
	out.AvailabilityZones = append([]string(nil), g.spec.AvailabilityZones...)
	for _, in := range g.instances {
		out.Instances = append(out.Instances, *in)
	}
	for i := len(g.activities) - 1; i >= 0; i-- {
		out.Activities = append(out.Activities, *g.activities[i])
	}
	return out
}

// active counts the instances that make up the desired capacity.
func (g *group) active() []*Instance {
	var out []*Instance
	for _, in := range g.instances {
		switch in.LifecycleState {
		case StateTerminating, StateTerminated, StateStandby:
			continue
		}
		out = append(out, in)
	}
	return out
}

func (g *group) instance(id string) *Instance {
	for _, in := range g.instances {
		if in.ID == id {
			return in
		}
	}
	return nil
}

func (g *group) hasTag(key string) bool {
	_, ok := g.spec.Tags[key]
	return ok
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
