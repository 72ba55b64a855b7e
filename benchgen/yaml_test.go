package benchgen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestWriteYAMLRoundTrip decodes the S1 YAML list and compares every item
// with the generated object.
func TestWriteYAMLRoundTrip(t *testing.T) {
	c := Generate(S1())
	var buf bytes.Buffer
	if err := c.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "# cabench-gen v1 seed=42 N=100 ") {
		t.Errorf("YAML does not start with the canonical header: %.80q", buf.String())
	}
	var list corev1.List
	if err := yaml.UnmarshalStrict(buf.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		t.Errorf("list type %s/%s, want v1/List", list.APIVersion, list.Kind)
	}
	var want []any
	for _, n := range c.Nodes {
		want = append(want, withType(*n))
	}
	for _, rs := range c.ReplicaSets {
		want = append(want, withType(*rs))
	}
	for _, p := range append(append([]*corev1.Pod{}, c.RunningPods...), c.PendingPods...) {
		want = append(want, withType(*p))
	}
	if len(list.Items) != len(want) {
		t.Fatalf("%d items, want %d", len(list.Items), len(want))
	}
	for i, raw := range list.Items {
		got := decodeLike(t, raw.Raw, want[i])
		checkEqual(t, "YAML item", got, want[i])
	}
}

// withType returns obj with its apiVersion and kind set.
func withType(obj any) any {
	switch o := obj.(type) {
	case corev1.Node:
		o.TypeMeta = nodeType()
		return o
	case appsv1.ReplicaSet:
		o.TypeMeta = rsType()
		return o
	case corev1.Pod:
		o.TypeMeta = podType()
		return o
	}
	panic("unexpected type")
}

// decodeLike decodes raw JSON into a value of the same type as like.
func decodeLike(t *testing.T, raw []byte, like any) any {
	t.Helper()
	var err error
	switch like.(type) {
	case corev1.Node:
		var v corev1.Node
		err = json.Unmarshal(raw, &v)
		like = v
	case appsv1.ReplicaSet:
		var v appsv1.ReplicaSet
		err = json.Unmarshal(raw, &v)
		like = v
	case corev1.Pod:
		var v corev1.Pod
		err = json.Unmarshal(raw, &v)
		like = v
	}
	if err != nil {
		t.Fatal(err)
	}
	return like
}

func TestWriteYAMLReportsWriteErrors(t *testing.T) {
	if err := Generate(S1()).WriteYAML(failWriter{}); err != errTest {
		t.Errorf("WriteYAML to a failing writer = %v, want %v", err, errTest)
	}
}
