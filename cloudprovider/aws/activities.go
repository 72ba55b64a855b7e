package aws

import (
	"regexp"
	"sort"
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

// launchFailure looks at a group's scaling activities and returns the
// error of its latest launch attempt started at or after since, or nil
// when that attempt did not fail (or there is none).
func launchFailure(asg string, activities []astypes.Activity, since time.Time) *cloudprovider.InstanceErrorInfo {
	launches := make([]astypes.Activity, 0, len(activities))
	for _, a := range activities {
		if a.StartTime == nil || a.StartTime.Before(since) {
			continue
		}
		if !strings.HasPrefix(strings.ToLower(deref(a.Description)), "launching") {
			continue
		}
		launches = append(launches, a)
	}
	if len(launches) == 0 {
		return nil
	}
	sort.SliceStable(launches, func(i, j int) bool { return launches[i].StartTime.After(*launches[j].StartTime) })
	latest := launches[0]
	if latest.StatusCode != astypes.ScalingActivityStatusCodeFailed {
		return nil
	}
	msg := deref(latest.StatusMessage)
	if msg == "" {
		msg = deref(latest.Description)
	}
	return classifyLaunchFailure(asg, msg)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
