package aws

import (
	"strings"
	"testing"
)

// A resource tag whose quantity Kubernetes' parser would take hours on is
// refused before it is parsed, named in a warning, and the group's other
// tags are read. Before, the node loop's refresh of the group's template
// did not end.
func TestResourceTagQuantitiesBoundedBeforeParsing(t *testing.T) {
	out, warnings := resourcesFromTags(map[string]string{
		ResourceTagPrefix + "example.com/dongle": "1e-2000000000",
		ResourceTagPrefix + "example.com/long":   "1" + strings.Repeat("0", 64),
		ResourceTagPrefix + "example.com/fine":   "2",
	})
	if q, ok := out["example.com/fine"]; !ok || q.Value() != 2 || len(out) != 1 {
		t.Errorf("resources %v, want only example.com/fine: 2", out)
	}
	joined := strings.Join(warnings, "\n")
	if len(warnings) != 2 || !strings.Contains(joined, "example.com/dongle") || !strings.Contains(joined, "example.com/long") {
		t.Errorf("warnings %q, want one naming each bad tag", warnings)
	}
}
