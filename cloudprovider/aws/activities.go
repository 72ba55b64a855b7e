package aws

import (
	"regexp"
	"strings"
	"time"

	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// codeInMessage finds an EC2 error code in a scaling activity's status
// message, as in "Could not launch Spot Instances. InsufficientInstanceCapacity - ...".
var codeInMessage = regexp.MustCompile(`\b([A-Z][A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*) - `)

// capacityCodes are the EC2 launch errors that mean "no capacity of this
// kind here, now": the node loop should fall over to another group at once
// rather than wait. Quota errors count, as Cluster Autoscaler counts them
// for other clouds.
var capacityCodes = map[string]bool{
	"InsufficientInstanceCapacity":         true,
	"InsufficientCapacity":                 true,
	"InsufficientHostCapacity":             true,
	"InsufficientReservedInstanceCapacity": true,
	"InsufficientCapacityOnOutpost":        true,
	"InsufficientFreeAddressesInSubnet":    true,
	"InsufficientAddressCapacity":          true,
	"UnfulfillableCapacity":                true,
	"MaxSpotInstanceCountExceeded":         true,
	"SpotMaxPriceTooLow":                   true,
	"VcpuLimitExceeded":                    true,
	"InstanceLimitExceeded":                true,
}

// launchErrorCode is used when a failed launch names no EC2 error code.
const launchErrorCode = "LaunchFailed"

// classifyLaunchFailure turns a failed scaling activity's status message
// into instance error info.
func classifyLaunchFailure(asg, message string) *cloudprovider.InstanceErrorInfo {
	code := ""
	if m := codeInMessage.FindStringSubmatch(message); m != nil {
		code = m[1]
	}
	lower := strings.ToLower(message)
	if code == "" && (strings.Contains(lower, "do not have sufficient") || strings.Contains(lower, "insufficient capacity") ||
		strings.Contains(lower, "no spot capacity")) {
		code = "InsufficientInstanceCapacity"
	}
	if code == "" {
		code = launchErrorCode
	}
	class := cloudprovider.OtherErrorClass
	if capacityCodes[code] {
		class = cloudprovider.OutOfResourcesErrorClass
	}
	return &cloudprovider.InstanceErrorInfo{
		ErrorClass:   class,
		ErrorCode:    code,
		ErrorMessage: "Auto Scaling Group " + asg + " could not launch an instance: " + message,
	}
}

// launches is what a group's scaling activities tell of the launches
// started at or after a time.
type launches struct {
	// failure is the error of the latest failed launch among them, unless a
	// launch started after it succeeded. A launch still in flight after a
	// failure does not clear it: the group retries on its own, and until a
	// retry succeeds the capacity is as missing as it was (Cluster
	// Autoscaler reads any failed launch since its request the same way).
	failure *cloudprovider.InstanceErrorInfo
	// succeeded counts the launches done (the instance is in service);
	// inFlight those neither done, failed nor cancelled.
	succeeded, inFlight int
}

// readLaunches looks at a group's scaling activities (in any order) and
// sums up its launches started at or after since.
func readLaunches(asg string, activities []astypes.Activity, since time.Time) launches {
	var out launches
	var lastFailed, lastSucceeded *astypes.Activity
	later := func(a, than *astypes.Activity) bool { return than == nil || a.StartTime.After(*than.StartTime) }
	for i := range activities {
		a := &activities[i]
		if a.StartTime == nil || a.StartTime.Before(since) {
			continue
		}
		if !strings.HasPrefix(strings.ToLower(deref(a.Description)), "launching") {
			continue
		}
		switch a.StatusCode {
		case astypes.ScalingActivityStatusCodeSuccessful:
			out.succeeded++
			if later(a, lastSucceeded) {
				lastSucceeded = a
			}
		case astypes.ScalingActivityStatusCodeFailed:
			if later(a, lastFailed) {
				lastFailed = a
			}
		case astypes.ScalingActivityStatusCodeCancelled:
		default:
			out.inFlight++
		}
	}
	if lastFailed == nil || (lastSucceeded != nil && later(lastSucceeded, lastFailed)) {
		return out
	}
	msg := deref(lastFailed.StatusMessage)
	if msg == "" {
		msg = deref(lastFailed.Description)
	}
	out.failure = classifyLaunchFailure(asg, msg)
	return out
}

// launchFailure returns the error of a group's latest failed launch
// started at or after since, or nil when there is none or a later launch
// succeeded.
func launchFailure(asg string, activities []astypes.Activity, since time.Time) *cloudprovider.InstanceErrorInfo {
	return readLaunches(asg, activities, since).failure
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// watchVerdict is what a watch over a group's launches in flight does
// after reading its scaling activities.
type watchVerdict int

const (
	// keepWatching: launches are still in flight, or not yet started.
	keepWatching watchVerdict = iota
	// launchFailed: the latest launch failed; the node loop is told.
	launchFailed
	// launchesDone: every launch asked for is in service.
	launchesDone
)

// judgeLaunches decides a watch's next step from the launches read since
// it started and the number of instances asked for since then.
func judgeLaunches(l launches, wanted int) watchVerdict {
	switch {
	case l.failure != nil:
		return launchFailed
	case l.inFlight == 0 && l.succeeded >= wanted:
		return launchesDone
	}
	return keepWatching
}
