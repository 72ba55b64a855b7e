package templates

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// tenYears is --node-info-cache-expire-time's default.
const tenYears = 87600 * time.Hour

const kubeletLabel = "node.example.com/bootstrapped"

var dedicated = corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}

// liveNode is a node of group g, Ready since readyFor before now, with a
// label only its bootstrap sets, and what identifies the machine.
func liveNode(name string, readyFor time.Duration, edit ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Labels:      map[string]string{"pool": "g", kubeletLabel: "yes", corev1.LabelHostname: name},
			Annotations: map[string]string{"csi.volume.kubernetes.io/nodeid": `{"ebs":"i-0abc"}`}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0abc", PodCIDR: "10.0.1.0/24", Taints: []corev1.Taint{dedicated,
			{Key: scaledown.DeletionCandidateTaint, Value: "1", Effect: corev1.TaintEffectPreferNoSchedule},
			{Key: "status-taint.cluster-autoscaler.kubernetes.io/degraded", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourcePods: resource.MustParse("58")},
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("58")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(now.Add(-readyFor))}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.1.5"}},
			NodeInfo:  corev1.NodeSystemInfo{MachineID: "m-1", SystemUUID: "s-1", BootID: "b-1", KubeletVersion: "v1.36.3"},
			Images:    []corev1.ContainerImage{{Names: []string{"app:1"}}},
		},
	}
	for _, e := range edit {
		e(n)
	}
	return n
}

// providerNode is what the cloud's metadata says: no bootstrap label, the
// full capacity allocatable, and transient taints the template drops.
func providerNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "template-g", Labels: map[string]string{"pool": "g"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: clusterstate.StartupTaintPrefix + "gpu-driver", Value: "installing", Effect: corev1.TaintEffectNoSchedule},
			dedicated,
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
}

func daemonSet(name string, tolerations ...corev1.Toleration) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("ds-" + name)},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: name}}, Tolerations: tolerations}}}}
}

func pod(name, node string, edit ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-" + name), ResourceVersion: "3"},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, e := range edit {
		e(p)
	}
	return p
}

func ownedBy(ds *appsv1.DaemonSet) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	}
}

func mirror(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"} }

func deleting(p *corev1.Pod) { t := metav1.NewTime(now); p.DeletionTimestamp = &t }

var (
	tolerant = daemonSet("agent", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
	// intolerant never runs on the group's nodes (dedicated taint).
	intolerant = daemonSet("other")
	// logs is a DaemonSet whose pod is on the live node already.
	logs = daemonSet("logs", corev1.Toleration{Operator: corev1.TolerationOpExists})
)

// podsOnLive are the pods of node a-1: its DaemonSet pod and static pod
// start on a new node too; a ReplicaSet's pod and a DaemonSet pod being
// deleted do not.
func podsOnLive(node string) []*corev1.Pod {
	if node != "a-1" {
		return nil
	}
	return []*corev1.Pod{pod("logs-x1", node, ownedBy(logs)), pod("kube-proxy-a-1", node, mirror),
		pod("web-1", node), pod("old-logs", node, ownedBy(daemonSet("gone")), deleting)}
}

func podNames(pods []*corev1.Pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name+"@"+p.Spec.NodeName)
	}
	return strings.Join(names, ",")
}

func TestDecide(t *testing.T) {
	cachedNode := sanitizeNode(liveNode("a-0", 2*time.Hour), NodeName("g"), clusterstate.Taints{})
	cached := &Entry{Node: cachedNode, Pods: []*corev1.Pod{pod("logs-x1", cachedNode.Name, ownedBy(logs))}, From: "a-0", Seen: now.Add(-time.Hour)}
	fromNode := func(t *testing.T, got Template) {
		t.Helper()
		if got.Source != FromNode || got.From != "a-1" || got.Keep == nil || got.Keep.Seen != now || got.Keep.From != "a-1" {
			t.Fatalf("source %s from %q, kept %+v: want a-1's node, kept as seen now", got.Source, got.From, got.Keep)
		}
	}
	fromProvider := func(t *testing.T, got Template) {
		t.Helper()
		if got.Source != FromProvider || got.Node.Name != "template-g" || got.Keep != nil {
			t.Fatalf("source %s, node %s, kept %+v: want the provider's, nothing kept", got.Source, got.Node.Name, got.Keep)
		}
	}
	for _, tc := range []struct {
		name   string
		nodes  []*corev1.Node
		cached *Entry
		ttl    time.Duration
		check  func(*testing.T, Template)
	}{
		{name: "no node, never seen: provider's template without transient taints, with its DaemonSets' pods",
			check: func(t *testing.T, got Template) {
				fromProvider(t, got)
				if ts := got.Node.Spec.Taints; len(ts) != 1 || ts[0] != dedicated {
					t.Fatalf("taints %v, want only %v", ts, dedicated)
				}
				if names := podNames(got.Pods); names != "agent-template-g@template-g,logs-template-g@template-g" {
					t.Fatalf("pods %s, want the tolerating DaemonSets' only", names)
				}
			}},
		{name: "a Ready node: sanitized copy of it", nodes: []*corev1.Node{liveNode("a-1", time.Hour)},
			check: func(t *testing.T, got Template) {
				fromNode(t, got)
				n, name := got.Node, NodeName("g")
				if n.Name != name || n.Labels[corev1.LabelHostname] != name || n.Labels[kubeletLabel] != "yes" || n.Labels["pool"] != "g" {
					t.Fatalf("name %s, labels %v: want %s, its hostname, and the node's other labels", n.Name, n.Labels, name)
				}
				if n.UID != "" || n.ResourceVersion != "" || n.Spec.ProviderID != "" || n.Spec.PodCIDR != "" || len(n.Annotations) != 0 ||
					len(n.Status.Addresses) != 0 || len(n.Status.Images) != 0 || n.Status.NodeInfo.MachineID != "" ||
					n.Status.NodeInfo.SystemUUID != "" || n.Status.NodeInfo.BootID != "" {
					t.Fatalf("the template keeps the machine's identity: %+v", n)
				}
				if c := n.Status.Conditions; len(c) != 1 || c[0].Status != corev1.ConditionTrue || !c[0].LastTransitionTime.IsZero() {
					t.Fatalf("conditions %+v, want Ready without its times", c)
				}
				if n.Status.NodeInfo.KubeletVersion != "v1.36.3" {
					t.Fatalf("system info %+v, want the kubelet version kept", n.Status.NodeInfo)
				}
				if cpu := n.Status.Allocatable[corev1.ResourceCPU]; cpu.String() != "3920m" {
					t.Fatalf("allocatable CPU %s, want the node's 3920m", cpu.String())
				}
				if ts := n.Spec.Taints; len(ts) != 1 || ts[0] != dedicated {
					t.Fatalf("taints %v, want only %v (no scale-down or status taint)", ts, dedicated)
				}
				if names := podNames(got.Pods); names != "logs-x1@"+name+",kube-proxy-a-1@"+name+",agent-"+name+"@"+name {
					t.Fatalf("pods %s: want the node's DaemonSet and static pods, and the missing tolerating DaemonSet's", names)
				}
				if names := podNames(got.Keep.Pods); names != "logs-x1@"+name+",kube-proxy-a-1@"+name {
					t.Fatalf("kept pods %s: want the node's own only", names)
				}
			}},
		{name: "the lowest-named good node", nodes: []*corev1.Node{liveNode("a-2", time.Hour), liveNode("a-1", time.Hour)}, check: fromNode},
		{name: "not Ready", nodes: []*corev1.Node{liveNode("a-1", time.Hour, func(n *corev1.Node) {
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		})}, check: fromProvider},
		{name: "no Ready condition", nodes: []*corev1.Node{liveNode("a-1", time.Hour, func(n *corev1.Node) { n.Status.Conditions = nil })},
			check: fromProvider},
		{name: "startup taint", nodes: []*corev1.Node{liveNode("a-1", time.Hour, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: clusterstate.StartupTaintPrefix + "cni", Effect: corev1.TaintEffectNoSchedule})
		})}, check: fromProvider},
		{name: "Ready for less than the stabilization delay", nodes: []*corev1.Node{liveNode("a-1", StabilizationDelay-time.Second)},
			check: fromProvider},
		{name: "being deleted", nodes: []*corev1.Node{liveNode("a-1", time.Hour, func(n *corev1.Node) {
			t := metav1.NewTime(now)
			n.DeletionTimestamp = &t
		})}, check: fromProvider},
		{name: "tainted for removal", nodes: []*corev1.Node{liveNode("a-1", time.Hour, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: scaledown.ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule})
		})}, check: fromProvider},
		{name: "cordoned", nodes: []*corev1.Node{liveNode("a-1", time.Hour, func(n *corev1.Node) { n.Spec.Unschedulable = true })},
			check: fromProvider},
		{name: "a good node wins over the cache", nodes: []*corev1.Node{liveNode("a-1", time.Hour)}, cached: cached, check: fromNode},
		{name: "group at zero: the cache, with DaemonSets that came since", cached: cached, ttl: 2 * time.Hour,
			check: func(t *testing.T, got Template) {
				if got.Source != FromCache || got.From != "a-0" || got.Keep != cached || got.Node != cachedNode {
					t.Fatalf("source %s from %q, kept %+v: want the cached entry, kept as it was", got.Source, got.From, got.Keep)
				}
				if names := podNames(got.Pods); names != "logs-x1@"+cachedNode.Name+",agent-"+cachedNode.Name+"@"+cachedNode.Name {
					t.Fatalf("pods %s", names)
				}
			}},
		{name: "only a not Ready node: the cache", nodes: []*corev1.Node{liveNode("a-1", time.Hour, func(n *corev1.Node) {
			n.Status.Conditions[0].Status = corev1.ConditionUnknown
		})}, cached: cached, ttl: 2 * time.Hour, check: func(t *testing.T, got Template) {
			if got.Source != FromCache {
				t.Fatalf("source %s, want cache", got.Source)
			}
		}},
		{name: "cache expired", cached: cached, ttl: 59 * time.Minute, check: fromProvider},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ttl := tc.ttl
			if ttl == 0 {
				ttl = tenYears
			}
			var kept []string
			for _, n := range tc.nodes {
				kept = append(kept, n.Spec.ProviderID)
			}
			got, err := decide(Input{Group: "g", Nodes: tc.nodes, Cached: tc.cached,
				DaemonSets: []*appsv1.DaemonSet{tolerant, intolerant, logs}, Taints: clusterstate.Taints{}, Now: now, CacheTTL: ttl},
				&cloudprovider.NodeTemplate{Node: providerNode()})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
			for i, n := range tc.nodes {
				if n.Spec.ProviderID != kept[i] || n.Labels[corev1.LabelHostname] != n.Name {
					t.Fatalf("the live node %s was changed: %+v", n.Name, n)
				}
			}
		})
	}
}

// decide is what the node loop does: Need, then the example's pods or the
// provider's template, then Decide.
func decide(in Input, provider *cloudprovider.NodeTemplate) (Template, error) {
	need := Need(in)
	if need.Example != "" {
		in.ExamplePods = podsOnLive(need.Example)
	}
	if need.Provider {
		in.Provider = provider
	}
	return Decide(in)
}

func TestDecideWithoutAProviderNode(t *testing.T) {
	for _, p := range []*cloudprovider.NodeTemplate{nil, {}} {
		_, err := Decide(Input{Group: "g", Provider: p, Now: now, CacheTTL: tenYears})
		if err == nil || err.Error() != "the provider returned no template node" {
			t.Fatalf("provider template %+v: error %v, want the provider returned no template node", p, err)
		}
	}
}

// The provider's template, whose making may cost cloud calls and may be
// missing or wrong (a group with no node-template tags), is needed only
// when no live node and no cached copy of one serves.
func TestNeed(t *testing.T) {
	entry := &Entry{Node: liveNode("a-0", time.Hour), From: "a-0", Seen: now.Add(-time.Hour)}
	for _, tc := range []struct {
		name   string
		nodes  []*corev1.Node
		cached *Entry
		ttl    time.Duration
		want   Needs
	}{
		{"live node", []*corev1.Node{liveNode("a-2", time.Hour), liveNode("a-1", time.Hour)}, nil, tenYears, Needs{Example: "a-1"}},
		{"live node beats the cache", []*corev1.Node{liveNode("a-1", time.Hour)}, entry, tenYears, Needs{Example: "a-1"}},
		{"node ready too briefly, cache", []*corev1.Node{liveNode("a-1", time.Second)}, entry, tenYears, Needs{}},
		{"no node, cache", nil, entry, tenYears, Needs{}},
		{"no node, cache expired", nil, entry, 30 * time.Minute, Needs{Provider: true}},
		{"nothing", nil, nil, tenYears, Needs{Provider: true}},
	} {
		got := Need(Input{Group: "g", Nodes: tc.nodes, Cached: tc.cached, Now: now, CacheTTL: tc.ttl})
		if got != tc.want {
			t.Errorf("%s: need %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A GPU node (the provider's label) whose GPUs are not allocatable yet is no
// example for a template: new nodes would look GPU-less.
func TestGPUNodeWithoutItsGPUsIsNoExample(t *testing.T) {
	taints := clusterstate.Taints{GPULabel: "k8s.amazonaws.com/accelerator"}
	labelled := func(n *corev1.Node) { n.Labels[taints.GPULabel] = "nvidia-tesla-t4" }
	withGPU := func(n *corev1.Node) { n.Status.Allocatable[cloudprovider.ResourceNvidiaGPU] = resource.MustParse("1") }
	for _, tc := range []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"GPU node, GPUs allocatable", liveNode("a-1", time.Hour, labelled, withGPU), true},
		{"GPU node, driver not up", liveNode("a-1", time.Hour, labelled), false},
		{"no GPU label", liveNode("a-1", time.Hour), true},
	} {
		if got := goodExample(tc.node, taints, now); got != tc.want {
			t.Errorf("%s: good example %v, want %v", tc.name, got, tc.want)
		}
	}
}
