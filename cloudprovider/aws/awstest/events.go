package awstest

import (
	"encoding/json"
	"fmt"
	"time"
)

// EventBridge events as AWS delivers them to an SQS target: the envelope
// (version, id, detail-type, source, account, time, region, resources,
// detail) and each detail's fields as AWS documents them.

func (s *Server) event(detailType, source string, at time.Time, resources []string, detail any) []byte {
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(s.idBase>>8), s.seq&0xffff, 0x4000|s.seq&0xfff, 0x8000|(s.seq>>12)&0xfff, s.idBase^s.seq)
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"version": "0", "id": id, "detail-type": detailType, "source": source,
		"account": DefaultAccountID, "time": at.UTC().Format(time.RFC3339), "region": s.region, "resources": resources, "detail": detail})
	return b
}

func (s *Server) instanceARN(id string) string {
	return "arn:aws:ec2:" + s.region + ":" + DefaultAccountID + ":instance/" + id
}

// SpotInterruptionWarning is EC2's warning, two minutes ahead, that it
// reclaims a spot instance.
func (s *Server) SpotInterruptionWarning(instanceID string, at time.Time) []byte {
	return s.event("EC2 Spot Instance Interruption Warning", "aws.ec2", at, []string{s.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "instance-action": "terminate"})
}

// RebalanceRecommendation is EC2's signal that a spot instance is at
// raised risk of interruption.
func (s *Server) RebalanceRecommendation(instanceID string, at time.Time) []byte {
	return s.event("EC2 Instance Rebalance Recommendation", "aws.ec2", at, []string{s.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID})
}

// StateChange is EC2's notification that an instance entered state.
func (s *Server) StateChange(instanceID, state string, at time.Time) []byte {
	return s.event("EC2 Instance State-change Notification", "aws.ec2", at, []string{s.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "state": state})
}

// ScheduledRetirement is an AWS Health scheduled change: the instances are
// retired from start on.
func (s *Server) ScheduledRetirement(at, start time.Time, instanceIDs ...string) []byte {
	entities := make([]map[string]string, 0, len(instanceIDs))
	for _, id := range instanceIDs {
		entities = append(entities, map[string]string{"entityValue": id})
	}
	code := "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
	return s.event("AWS Health Event", "aws.health", at, instanceIDs, map[string]any{
		"eventArn": "arn:aws:health:" + s.region + "::event/EC2/" + code + "/" + code + "_1", "service": "EC2",
		"eventTypeCode": code, "eventTypeCategory": "scheduledChange",
		"startTime": start.UTC().Format(healthTimeLayout), "endTime": start.Add(time.Hour).UTC().Format(healthTimeLayout),
		"eventDescription": []map[string]string{{"language": "en_US", "latestDescription": "The instance is scheduled for retirement."}},
		"affectedEntities": entities})
}

// healthTimeLayout is how AWS Health writes times.
const healthTimeLayout = "Mon, 02 Jan 2006 15:04:05 GMT"
