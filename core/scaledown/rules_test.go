package scaledown

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDisabled: a node annotated scale-down-disabled or Karpenter's
// do-not-disrupt with "true" is kept from scale-down and consolidation;
// other values are not.
func TestDisabled(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, ""},
		{map[string]string{ScaleDownDisabledAnnotation: "true"}, ScaleDownDisabledAnnotation + "=true"},
		{map[string]string{DoNotDisruptAnnotation: "true"}, DoNotDisruptAnnotation + "=true"},
		{map[string]string{DoNotDisruptAnnotation: "false"}, ""},
		{map[string]string{ScaleDownDisabledAnnotation: "yes"}, ""},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tc.annotations}}
		got, disabled := Disabled(n)
		if got != tc.want || disabled != (tc.want != "") {
			t.Errorf("Disabled(%v) = %q, %v; want %q", tc.annotations, got, disabled, tc.want)
		}
	}
}
