package deploy

import (
	"slices"
	"strings"
	"testing"
)

// The policy of --replace-drifted-nodes grants the two reads of AMI drift:
// DescribeInstances on * (it has no resource-level permissions) and
// GetParameter on parameters only, never on every parameter of an account.
func TestReplaceDriftedNodesPolicyIsNarrow(t *testing.T) {
	var actions []string
	for _, st := range readPolicy(t, "iam-policy-replace-drifted-nodes.json").Statement {
		acts := iamStrings(st.Action)
		actions = append(actions, acts...)
		for _, r := range iamStrings(st.Resource) {
			switch {
			case slices.Equal(acts, []string{"ec2:DescribeInstances"}) && r == "*":
			case strings.HasPrefix(r, "arn:aws:ssm:") && strings.Contains(r, ":parameter/") && !strings.HasSuffix(r, ":parameter/*") && !slices.Contains(acts, "ec2:DescribeInstances"):
			default:
				t.Errorf("%v granted on %q, want DescribeInstances on * and GetParameter on parameter ARNs", acts, r)
			}
		}
	}
	slices.Sort(actions)
	if want := []string{"ec2:DescribeInstances", "ssm:GetParameter"}; !slices.Equal(actions, want) {
		t.Errorf("actions %v, want %v", actions, want)
	}
}
