package local

import (
	"fmt"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// Fault is a failure the local cloud can be told to simulate for a group.
type Fault string

const (
	// NoFault: launches succeed.
	NoFault Fault = ""
	// FaultOutOfCapacity: launches fail as a real cloud's do when it has no
	// stock of the instance type; the instance reports an
	// OutOfResources error.
	FaultOutOfCapacity Fault = "out-of-capacity"
	// FaultLaunchFailure: launches fail for another reason (a bad image,
	// a quota); the instance reports an Other error.
	FaultLaunchFailure Fault = "launch-failure"
	// FaultAPIError: the cloud API itself refuses IncreaseSize.
	FaultAPIError Fault = "api-error"
)

func (f Fault) validate() error {
	switch f {
	case NoFault, FaultOutOfCapacity, FaultLaunchFailure, FaultAPIError:
		return nil
	}
	return fmt.Errorf("fault %q: want %q, %q or %q", string(f), FaultOutOfCapacity, FaultLaunchFailure, FaultAPIError)
}

// errorInfo is what an instance whose launch hit the fault reports.
func (f Fault) errorInfo(group string) *cloudprovider.InstanceErrorInfo {
	switch f {
	case FaultOutOfCapacity:
		return &cloudprovider.InstanceErrorInfo{
			ErrorClass:   cloudprovider.OutOfResourcesErrorClass,
			ErrorCode:    "InsufficientInstanceCapacity",
			ErrorMessage: fmt.Sprintf("node group %s: no capacity of this instance type in its zone", group),
		}
	case FaultLaunchFailure:
		return &cloudprovider.InstanceErrorInfo{
			ErrorClass:   cloudprovider.OtherErrorClass,
			ErrorCode:    "LaunchFailed",
			ErrorMessage: fmt.Sprintf("node group %s: the instance failed to launch", group),
		}
	}
	return nil
}
