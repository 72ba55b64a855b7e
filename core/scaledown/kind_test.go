package scaledown

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// admitted is a replica of app as the API server stores it.
func admitted(r *rand.Rand, app string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-" + simtest.Suffix(r, 5), Namespace: "default", Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: app, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	simtest.Admit(p, r)
	return p
}

func TestReplicasShareAPlacementKey(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	base := admitted(r, "web")
	required := func(zone string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
	}
	base.Spec.Affinity = required("a")
	cases := []struct {
		name string
		edit func(*corev1.Pod)
		same bool
	}{
		{"another replica (its own tolerationSeconds pointers)", func(p *corev1.Pod) {}, true},
		{"another tolerationSeconds", func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](30) }, true},
		{"pod anti-affinity", func(p *corev1.Pod) {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}, TopologyKey: corev1.LabelHostname}}}
		}, true},
		{"another toleration", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
		}, false},
		{"a node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "x"} }, false},
		{"another zone", func(p *corev1.Pod) { p.Spec.Affinity = required("b") }, false},
	}
	for _, tc := range cases {
		p := admitted(r, "web")
		p.Spec.Affinity = required("a")
		tc.edit(p)
		if same := string(simulator.PlacementKey(nil, p)) == string(simulator.PlacementKey(nil, base)); same != tc.same {
			t.Errorf("%s: same kind %v, want %v", tc.name, same, tc.same)
		}
	}
}
