package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/interruption"
)

// The interruption queue's policy grants the three calls tidal makes, on
// the one queue, nothing on *.
func TestInterruptionQueuePolicyIsNarrow(t *testing.T) {
	var actions []string
	for _, st := range readPolicy(t, "iam-policy-interruption-queue.json").Statement {
		actions = append(actions, iamStrings(st.Action)...)
		for _, r := range iamStrings(st.Resource) {
			if !strings.HasPrefix(r, "arn:aws:sqs:") || strings.Contains(r, "*") {
				t.Errorf("granted on %q, want one queue's ARN", r)
			}
		}
	}
	slices.Sort(actions)
	if want := []string{"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}; !slices.Equal(actions, want) {
		t.Errorf("actions %v, want %v", actions, want)
	}
}

// Every EventBridge rule of the CloudFormation template sends events tidal
// acts on: an event of each rule's source and detail-type is read, not
// dropped as unknown.
func TestInterruptionQueueRulesMatchWhatTidalReads(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(Dir(), "aws", "interruption-queue.cfn.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Type       string `json:"Type"`
			Properties struct {
				EventPattern struct {
					Source     []string `json:"source"`
					DetailType []string `json:"detail-type"`
				} `json:"EventPattern"`
			} `json:"Properties"`
		} `json:"Resources"`
	}
	if err := yaml.Unmarshal(data, &tmpl); err != nil {
		t.Fatal(err)
	}
	details := map[string]string{
		"EC2 Spot Instance Interruption Warning": `{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}`,
		"EC2 Instance Rebalance Recommendation":  `{"instance-id":"i-0123456789abcdef0"}`,
		"EC2 Instance State-change Notification": `{"instance-id":"i-0123456789abcdef0","state":"stopping"}`,
		"AWS Health Event": `{"service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange",
			"startTime":"Sat, 05 Dec 2026 17:00:00 GMT","affectedEntities":[{"entityValue":"i-0123456789abcdef0"}]}`,
	}
	var rules []string
	for name, r := range tmpl.Resources {
		if r.Type != "AWS::Events::Rule" {
			continue
		}
		p := r.Properties.EventPattern
		if len(p.Source) != 1 || len(p.DetailType) != 1 {
			t.Fatalf("rule %s: want one source and one detail-type, got %+v", name, p)
		}
		rules = append(rules, p.DetailType[0])
		body := fmt.Sprintf(`{"id":"x","detail-type":%q,"source":%q,"time":"2026-11-28T06:00:00Z","detail":%s}`, p.DetailType[0], p.Source[0], details[p.DetailType[0]])
		if _, err := interruption.Parse([]byte(body)); err != nil {
			t.Errorf("rule %s sends %s from %s, which tidal does not act on: %v", name, p.DetailType[0], p.Source[0], err)
		}
	}
	if len(rules) != len(details) {
		t.Errorf("rules for %v, want one for each of the %d kinds of event", rules, len(details))
	}
}
