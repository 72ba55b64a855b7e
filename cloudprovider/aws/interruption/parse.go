// Package interruption reads the EventBridge events that tell of EC2
// instances going away on their own, as they arrive in an SQS queue: spot
// interruption warnings, rebalance recommendations, AWS Health scheduled
// changes and instance state changes. It is pure: a message body in, an
// interruption or the reason it is dropped out.
package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// The detail-types and sources of the events read, as EventBridge sends
// them.
const (
	spotWarning    = "EC2 Spot Instance Interruption Warning"
	rebalance      = "EC2 Instance Rebalance Recommendation"
	stateChange    = "EC2 Instance State-change Notification"
	healthEvent    = "AWS Health Event"
	sourceEC2      = "aws.ec2"
	sourceHealth   = "aws.health"
	healthService  = "EC2"
	scheduledClass = "scheduledChange"
)

// SpotWarningTime is how long before it reclaims a spot instance EC2 sends
// its interruption warning.
const SpotWarningTime = 2 * time.Minute

// Why a message is dropped.
var (
	// ErrUnknown is an event of a kind not acted on (another
	// detail-type, a Health event of another category or service).
	ErrUnknown = errors.New("unknown event")
	// ErrIgnored is a known event that takes no instance away (a state
	// change to pending or running).
	ErrIgnored = errors.New("event takes no instance away")
	// ErrMalformed is a message that is not such an event.
	ErrMalformed = errors.New("malformed event")
)

// Reason is the label a dropped message is counted under: unknown,
// ignored or malformed.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrUnknown):
		return "unknown"
	case errors.Is(err, ErrIgnored):
		return "ignored"
	}
	return "malformed"
}

// event is the EventBridge envelope.
type event struct {
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	StartTime         string `json:"startTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// disruptive are the instance states a state change is acted on in.
var disruptive = map[string]bool{"stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

var instanceID = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// Parse reads one message body. The interruption's ID is the event's; the
// caller replaces it with the message's.
func Parse(body []byte) (cloudprovider.Interruption, error) {
	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		return cloudprovider.Interruption{}, fmt.Errorf("%w: not JSON: %v", ErrMalformed, err)
	}
	if e.DetailType == "" || e.Source == "" {
		return cloudprovider.Interruption{}, fmt.Errorf("%w: no detail-type or source", ErrMalformed)
	}
	at, err := time.Parse(time.RFC3339, e.Time)
	if err != nil {
		return cloudprovider.Interruption{}, fmt.Errorf("%w: time %q: %v", ErrMalformed, e.Time, err)
	}
	in := cloudprovider.Interruption{ID: e.ID, Time: at}
	switch {
	case e.Source == sourceEC2 && e.DetailType == spotWarning:
		d, err := ec2DetailOf(e)
		if err != nil {
			return in, err
		}
		in.Kind, in.Instances, in.Deadline, in.Detail = cloudprovider.SpotInterruption, []string{d.InstanceID}, at.Add(SpotWarningTime), d.InstanceAction
	case e.Source == sourceEC2 && e.DetailType == rebalance:
		d, err := ec2DetailOf(e)
		if err != nil {
			return in, err
		}
		in.Kind, in.Instances = cloudprovider.RebalanceRecommendation, []string{d.InstanceID}
	case e.Source == sourceEC2 && e.DetailType == stateChange:
		d, err := ec2DetailOf(e)
		if err != nil {
			return in, err
		}
		if d.State == "" {
			return in, fmt.Errorf("%w: state change without a state", ErrMalformed)
		}
		if !disruptive[d.State] {
			return in, fmt.Errorf("%w: instance %s is %s", ErrIgnored, d.InstanceID, d.State)
		}
		in.Kind, in.Instances, in.Deadline, in.Detail = cloudprovider.StateChange, []string{d.InstanceID}, at, d.State
	case e.Source == sourceHealth && e.DetailType == healthEvent:
		return health(in, e)
	default:
		return in, fmt.Errorf("%w: %s from %s", ErrUnknown, e.DetailType, e.Source)
	}
	return in, nil
}

func ec2DetailOf(e event) (ec2Detail, error) {
	var d ec2Detail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return d, fmt.Errorf("%w: %s detail: %v", ErrMalformed, e.DetailType, err)
	}
	if !instanceID.MatchString(d.InstanceID) {
		return d, fmt.Errorf("%w: %s: instance-id %q is not i-<hex>", ErrMalformed, e.DetailType, d.InstanceID)
	}
	return d, nil
}

// health reads an AWS Health event: only EC2's scheduled changes are acted
// on; their instances are the affected entities (or, failing those, the
// resources), the deadline the start of the change.
func health(in cloudprovider.Interruption, e event) (cloudprovider.Interruption, error) {
	var d healthDetail
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		return in, fmt.Errorf("%w: health detail: %v", ErrMalformed, err)
	}
	if d.Service != healthService || d.EventTypeCategory != scheduledClass {
		return in, fmt.Errorf("%w: health event %s of %s (%s)", ErrUnknown, d.EventTypeCode, d.Service, d.EventTypeCategory)
	}
	ids := make([]string, 0, len(d.AffectedEntities))
	for _, a := range d.AffectedEntities {
		ids = append(ids, a.EntityValue)
	}
	if len(ids) == 0 {
		ids = e.Resources
	}
	for _, id := range ids {
		if !instanceID.MatchString(id) {
			return in, fmt.Errorf("%w: health event %s: affected entity %q is not an instance id", ErrMalformed, d.EventTypeCode, id)
		}
	}
	if len(ids) == 0 {
		return in, fmt.Errorf("%w: health event %s names no instance", ErrMalformed, d.EventTypeCode)
	}
	start, err := healthTime(d.StartTime)
	if err != nil {
		return in, fmt.Errorf("%w: health event %s: startTime %q: %v", ErrMalformed, d.EventTypeCode, d.StartTime, err)
	}
	in.Kind, in.Instances, in.Deadline, in.Detail = cloudprovider.ScheduledChange, ids, start, d.EventTypeCode
	return in, nil
}

// healthTime reads a Health event's time: RFC 1123 with a zone name as
// AWS Health writes it ("Sat, 05 Jun 2021 17:00:00 GMT"), or RFC 3339.
func healthTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC1123, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, s)
}
