package interruption

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// The bodies are shaped as EventBridge delivers these events to an SQS
// target (the field names, detail-types and sources of AWS's documented
// examples).
func TestParse(t *testing.T) {
	at := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		body string
		want cloudprovider.Interruption
		err  error
	}{{
		name: "spot interruption warning",
		body: `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning",
			"source":"aws.ec2","account":"123456789012","time":"2026-11-28T06:00:00Z","region":"us-east-2",
			"resources":["arn:aws:ec2:us-east-2a:instance/i-1234567890abcdef0"],
			"detail":{"instance-id":"i-1234567890abcdef0","instance-action":"terminate"}}`,
		want: cloudprovider.Interruption{ID: "1e5527d7-bb36-4607-3370-4164db56a40e", Kind: cloudprovider.SpotInterruption,
			Instances: []string{"i-1234567890abcdef0"}, Time: at, Deadline: at.Add(2 * time.Minute), Detail: "terminate"},
	}, {
		name: "rebalance recommendation",
		body: `{"version":"0","id":"5a4f2c1e-0000-1111-2222-333344445555","detail-type":"EC2 Instance Rebalance Recommendation",
			"source":"aws.ec2","account":"123456789012","time":"2026-11-28T06:00:00Z","region":"us-east-2",
			"resources":["arn:aws:ec2:us-east-2:123456789012:instance/i-1234567890abcdef0"],
			"detail":{"instance-id":"i-1234567890abcdef0"}}`,
		want: cloudprovider.Interruption{ID: "5a4f2c1e-0000-1111-2222-333344445555", Kind: cloudprovider.RebalanceRecommendation,
			Instances: []string{"i-1234567890abcdef0"}, Time: at},
	}, {
		name: "state change to shutting-down",
		body: `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification",
			"source":"aws.ec2","account":"123456789012","time":"2026-11-28T06:00:00Z","region":"us-east-1",
			"resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],"detail":{"instance-id":"i-abcd1111","state":"shutting-down"}}`,
		want: cloudprovider.Interruption{ID: "7bf73129-1428-4cd3-a780-95db273d1602", Kind: cloudprovider.StateChange,
			Instances: []string{"i-abcd1111"}, Time: at, Deadline: at, Detail: "shutting-down"},
	}, {
		name: "state change to running is ignored",
		body: `{"version":"0","id":"x","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2",
			"time":"2026-11-28T06:00:00Z","detail":{"instance-id":"i-abcd1111","state":"running"}}`,
		err: ErrIgnored,
	}, {
		name: "health scheduled retirement",
		body: `{"version":"0","id":"121345678-1234-1234-1234-123456789012","detail-type":"AWS Health Event","source":"aws.health",
			"account":"123456789012","time":"2026-11-28T06:00:00Z","region":"us-west-2","resources":["i-abcd1111"],
			"detail":{"eventArn":"arn:aws:health:us-west-2::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_123",
			"service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange",
			"startTime":"Sat, 05 Dec 2026 17:00:00 GMT","endTime":"Sat, 05 Dec 2026 18:00:00 GMT",
			"eventDescription":[{"language":"en_US","latestDescription":"A description of the event will be provided here"}],
			"affectedEntities":[{"entityValue":"i-abcd1111","tags":{"stage":"prod"}},{"entityValue":"i-abcd2222"}]}}`,
		want: cloudprovider.Interruption{ID: "121345678-1234-1234-1234-123456789012", Kind: cloudprovider.ScheduledChange,
			Instances: []string{"i-abcd1111", "i-abcd2222"}, Time: at, Deadline: time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC),
			Detail: "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"},
	}, {
		name: "health event of another category",
		body: `{"id":"x","detail-type":"AWS Health Event","source":"aws.health","time":"2026-11-28T06:00:00Z",
			"detail":{"service":"EC2","eventTypeCode":"AWS_EC2_OPERATIONAL_ISSUE","eventTypeCategory":"issue"}}`,
		err: ErrUnknown,
	}, {
		name: "another detail-type",
		body: `{"id":"x","detail-type":"EC2 Instance Launch Successful","source":"aws.autoscaling","time":"2026-11-28T06:00:00Z","detail":{}}`,
		err:  ErrUnknown,
	}, {
		name: "not JSON", body: `hello`, err: ErrMalformed,
	}, {
		name: "an SNS envelope", body: `{"Type":"Notification","MessageId":"x","Message":"{}"}`, err: ErrMalformed,
	}, {
		name: "bad time",
		body: `{"id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"yesterday",
			"detail":{"instance-id":"i-1234567890abcdef0"}}`,
		err: ErrMalformed,
	}, {
		name: "instance id that is not one",
		body: `{"id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-11-28T06:00:00Z",
			"detail":{"instance-id":"../etc"}}`,
		err: ErrMalformed,
	}, {
		name: "detail of the wrong type",
		body: `{"id":"x","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","time":"2026-11-28T06:00:00Z","detail":[1]}`,
		err:  ErrMalformed,
	}, {
		name: "health event with a bad start",
		body: `{"id":"x","detail-type":"AWS Health Event","source":"aws.health","time":"2026-11-28T06:00:00Z",
			"detail":{"service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_REBOOT_MAINTENANCE_SCHEDULED","eventTypeCategory":"scheduledChange",
			"startTime":"soon","affectedEntities":[{"entityValue":"i-abcd1111"}]}}`,
		err: ErrMalformed,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.body))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Parse: err %v, want %v", err, tc.err)
				}
				if Reason(err) == "" {
					t.Fatal("no reason")
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.ID != tc.want.ID || got.Kind != tc.want.Kind || !slices.Equal(got.Instances, tc.want.Instances) ||
				!got.Time.Equal(tc.want.Time) || !got.Deadline.Equal(tc.want.Deadline) || got.Detail != tc.want.Detail {
				t.Fatalf("Parse:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestReason(t *testing.T) {
	for err, want := range map[error]string{ErrUnknown: "unknown", ErrIgnored: "ignored", ErrMalformed: "malformed", errors.New("x"): "malformed"} {
		if got := Reason(err); got != want {
			t.Errorf("Reason(%v) = %q, want %q", err, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-11-28T06:00:00Z","detail":{"instance-id":"i-1234567890abcdef0"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := Parse(body)
		if err != nil {
			return
		}
		if len(in.Instances) == 0 || in.Kind == "" {
			t.Fatalf("accepted an interruption of no instance or kind: %+v", in)
		}
	})
}
