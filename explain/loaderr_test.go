package explain

import (
	"strings"
	"testing"
)

func TestLoadErrorsNameWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "no Kubernetes object found"},
		{"kind: Pod\nmetadata: {name: a}\n", "document 1: an object without apiVersion or kind"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: node1}\n  spec: {unschedulable: maybe}\n",
			"document 2, item 1: Node node1"},
		{"apiVersion: v1\nkind: Pod\n  bad: [indent\n", "document 1"},
	} {
		_, err := Load(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) error = %v, want it to contain %q", tc.in, err, tc.want)
		}
	}
}

// Multi-document YAML with objects of kinds tidal does not know: those are
// skipped and counted, a node without providerID gets one naming it.
func TestLoadMultiDocument(t *testing.T) {
	in := "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: d}\n"
	s, err := Load(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Objects) != 2 || s.Skipped["example.com/v1 Widget"] != 1 {
		t.Errorf("%d objects, skipped %v; want 2 and the Widget", len(s.Objects), s.Skipped)
	}
	if s.Nodes[0].Spec.ProviderID != SnapshotProviderIDPrefix+"n1" {
		t.Errorf("providerID %q, want %q", s.Nodes[0].Spec.ProviderID, SnapshotProviderIDPrefix+"n1")
	}
}
