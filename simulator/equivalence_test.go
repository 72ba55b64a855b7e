package simulator

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// replica is a pod of ReplicaSet rs as the API server stores it: a
// generated name, the pod-template-hash label, and what admission adds.
func replica(r *rand.Rand, rs, cpu string) *corev1.Pod {
	p := testPod(rs, cpu)
	p.GenerateName = rs + "-5d8f7c9b4-"
	p.Name = p.GenerateName + simtest.Suffix(r, 5)
	p.UID = types.UID(p.Name)
	p.Labels["pod-template-hash"] = "5d8f7c9b4"
	simtest.Admit(p, r)
	return p
}

// partition is the groups as sets of pod names, independent of order.
func partition(groups []*PodGroup) map[string]string {
	out := map[string]string{}
	for _, g := range groups {
		for _, p := range g.Pods {
			out[p.Name] = g.Pods[0].Labels["app"] + "/" + g.Key
		}
	}
	return out
}

func TestEquivalenceGroupsReplicasAsTheAPIServerStoresThem(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var pods []*corev1.Pod
	for i := 0; i < 20; i++ {
		pods = append(pods, replica(r, "web", "1"))
	}
	for i := 0; i < 10; i++ {
		pods = append(pods, replica(r, "db", "2"))
	}
	simtest.Shuffle(r, pods)
	keys := NewEquivalenceKeys()
	groups := keys.Group(pods)
	if len(groups) != 2 {
		t.Fatalf("%d groups for the pods of 2 ReplicaSets (each pod with its own kube-api-access-<random> volume): want 2", len(groups))
	}
	for _, g := range groups {
		if want := map[string]int{"web": 20, "db": 10}[g.Pods[0].Labels["app"]]; len(g.Pods) != want {
			t.Fatalf("group of %s has %d pods, want %d", g.Pods[0].Labels["app"], len(g.Pods), want)
		}
	}
	before := partition(groups)
	for seed := uint64(0); seed < 5; seed++ {
		simtest.Shuffle(rand.New(rand.NewPCG(seed, 9)), pods)
		if after := partition(NewEquivalenceKeys().Group(pods)); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("lister order %d changed the groups", seed)
		}
	}
}

func TestEquivalenceKeepsApartWhatSchedulesDifferently(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := replica(r, "web", "1")
	claim := func(name string) corev1.Volume {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
	}
	base.Spec.Volumes = append(base.Spec.Volumes, claim("data-web-0"))
	cases := []struct {
		name string
		edit func(*corev1.Pod)
		same bool
	}{
		{"another replica", func(p *corev1.Pod) {}, true},
		{"environment", func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD", Value: p.Name}} }, true},
		{"hostname and subdomain", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = p.Name, "svc" }, true},
		{"a config map volume", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cfg-" + p.Name, VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}})
		}, true},
		{"other annotations", func(p *corev1.Pod) { p.Annotations = map[string]string{"checksum/config": p.Name} }, true},
		{"another claim", func(p *corev1.Pod) { p.Spec.Volumes[len(p.Spec.Volumes)-1] = claim("data-web-1") }, false},
		{"an emptyDir", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}, false},
		{"user namespaces on the host network", func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostUsers = true, ptr.To(false) }, false},
		{"a restart-all-containers rule", func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers}}
		}, false},
		{"more cpu", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}, false},
		{"a node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }, false},
		{"a safe-to-evict annotation", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
		}, false},
		{"another label", func(p *corev1.Pod) { p.Labels["tier"] = "x" }, false},
	}
	for _, tc := range cases {
		p := replica(r, "web", "1")
		p.Spec.Volumes = append(p.Spec.Volumes, claim("data-web-0"))
		tc.edit(p)
		if same := EquivalenceKey(p) == EquivalenceKey(base); same != tc.same {
			t.Errorf("%s: same key %v, want %v", tc.name, same, tc.same)
		}
	}
}

func TestEquivalenceKeyIsNotReusedForAChangedPodOfTheSameIdentity(t *testing.T) {
	// Pods the node loop pictures (provision-ahead, headroom) keep their UID
	// and resourceVersion when their workload's template changes.
	keys := NewEquivalenceKeys()
	small := testPod("web", "1")
	small.ResourceVersion = "1"
	big := small.DeepCopy()
	big.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("4")
	first := keys.Group([]*corev1.Pod{small})[0].Key
	if second := keys.Group([]*corev1.Pod{big})[0].Key; second == first {
		t.Fatal("a pod with 4 CPU got the key cached for its 1-CPU predecessor of the same UID and resourceVersion")
	}
}

func TestEquivalenceKeysSurviveAnotherCallerInBetween(t *testing.T) {
	keys := NewEquivalenceKeys()
	pending := testPod("web", "1")
	headroom := testPod("spare", "1")
	keys.Group([]*corev1.Pod{pending})
	keys.Group([]*corev1.Pod{headroom})
	if _, ok := keys.cache[pending.UID]; !ok {
		t.Fatal("the pending pod's key was forgotten by one call for other pods")
	}
	keys.Group([]*corev1.Pod{headroom})
	keys.Group([]*corev1.Pod{headroom})
	if _, ok := keys.cache[pending.UID]; ok {
		t.Fatal("a key unused for two calls is still cached")
	}
}
