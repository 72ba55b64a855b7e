package externalgrpc

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeWithAllocatable is the protobuf of a Node whose allocatable holds
// name: q, written field by field (resource.Quantity cannot hold q).
func nodeWithAllocatable(name, q string) []byte {
	msg := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	entry := append(msg(1, []byte(name)), msg(2, msg(1, []byte(q)))...)
	return append(msg(1, msg(1, []byte("template"))), msg(3, msg(2, entry))...)
}

// A template node whose quantity Kubernetes' parser would take hours on is
// refused before it is decoded, naming the field; a node as a server
// encodes it passes, and so do its quantities once decoded.
func TestTemplateQuantitiesBoundedBeforeDecoding(t *testing.T) {
	err := checkNodeQuantities(nodeWithAllocatable("cpu", "1e-2000000000"))
	if err == nil || !strings.Contains(err.Error(), "status.allocatable[cpu]") {
		t.Errorf("unbounded allocatable: %v, want an error naming status.allocatable[cpu]", err)
	}
	if err := checkNodeQuantities(nodeWithAllocatable("memory", "1"+strings.Repeat("0", 64))); err == nil {
		t.Error("a 65-digit quantity passed")
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "t", Labels: map[string]string{"a": "b"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("15Gi")}}}
	raw, err := n.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkNodeQuantities(raw); err != nil {
		t.Errorf("a node as a server encodes it: %v", err)
	}
	ok := nodeWithAllocatable("cpu", "2")
	var back corev1.Node
	if err := back.Unmarshal(ok); err != nil || back.Status.Allocatable.Cpu().Value() != 2 {
		t.Errorf("the hand-written node decodes to %v (%v): the test's encoding is not a Node's", back.Status.Allocatable, err)
	}
}
