package simulator

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodGroup is a set of pending pods that schedule the same: same controller,
// namespace, labels and scheduling-relevant spec. One PreFilter and one
// Filter per node serve the whole group.
type PodGroup struct {
	Key  string
	Pods []*corev1.Pod
	// Owner is the controller's UID, empty for pods without one.
	Owner types.UID
}

// Representative is the pod checked for the whole group.
func (g *PodGroup) Representative() *corev1.Pod { return g.Pods[0] }

// EquivalenceKeys computes and caches each pod's equivalence key. A key is
// reused while the pod is the same object (informers hand out a new object
// for every change), so pods pending for many loops are hashed once. It is
// not safe for concurrent use.
type EquivalenceKeys struct {
	cache map[types.UID]*cachedKey
	// calls counts rounds (Group calls, Sweeps); keys unused for two
	// rounds are forgotten, so two callers taking turns (pending pods,
	// headroom) keep theirs.
	calls uint64
}

type cachedKey struct {
	pod      *corev1.Pod
	key      string
	lastUsed uint64
}

// NewEquivalenceKeys returns an empty key cache.
func NewEquivalenceKeys() *EquivalenceKeys {
	return &EquivalenceKeys{cache: map[types.UID]*cachedKey{}}
}

// Group splits pods into equivalence groups, in the order each group's
// first pod appears; the groups themselves (which pods share one) do not
// depend on the order of pods. It ends a round (see Sweep).
func (k *EquivalenceKeys) Group(pods []*corev1.Pod) []*PodGroup {
	byKey := map[string]*PodGroup{}
	var groups []*PodGroup
	// Pods of one group mostly come together (created together, sorted
	// by creation): the last pod's group is looked at first.
	var last *PodGroup
	for _, p := range pods {
		c := k.entry(p)
		g := last
		if g == nil || g.Key != c.key {
			var ok bool
			if g, ok = byKey[c.key]; !ok {
				g = &PodGroup{Key: c.key, Owner: controllerUID(p)}
				byKey[c.key] = g
				groups = append(groups, g)
			}
			last = g
		}
		// The group's pods share one copy of the key: comparing them
		// next time reads no other.
		c.key = g.Key
		g.Pods = append(g.Pods, p)
	}
	k.Sweep()
	return groups
}

// Key is p's equivalence key, from the cache when p was seen before.
func (k *EquivalenceKeys) Key(p *corev1.Pod) string { return k.entry(p).key }

// entry is p's cache entry, made when p was not seen before (a pod
// without a UID gets one the cache does not keep).
func (k *EquivalenceKeys) entry(p *corev1.Pod) *cachedKey {
	if p.UID == "" {
		return &cachedKey{pod: p, key: EquivalenceKey(p)}
	}
	c := k.cache[p.UID]
	if c == nil || c.pod != p {
		c = &cachedKey{pod: p, key: EquivalenceKey(p)}
		k.cache[p.UID] = c
	}
	c.lastUsed = k.calls
	return c
}

// Sweep ends a round of lookups: keys used in neither this round nor the
// one before are forgotten.
func (k *EquivalenceKeys) Sweep() {
	for uid, c := range k.cache {
		if c.lastUsed+1 < k.calls {
			delete(k.cache, uid)
		}
	}
	k.calls++
}

// schedulingFields is what makes two pods schedule differently: what the
// scheduler's PreFilter and Filter plugins read from a pod, and what tidal
// reads (its annotations, the controller). What admission and controllers
// make differ between replicas of one workload, and what no plugin reads,
// is left out: names, generated suffixes, node name, status, environment,
// images, and the volumes no plugin looks at (projected, such as the
// ServiceAccount token volume kube-api-access-<random>, config maps,
// secrets, downward API) with their mounts.
type schedulingFields struct {
	Owner             types.UID                         `json:"o,omitempty"`
	Namespace         string                            `json:"n"`
	Labels            map[string]string                 `json:"l,omitempty"`
	NodeSelector      map[string]string                 `json:"ns,omitempty"`
	Affinity          *corev1.Affinity                  `json:"a,omitempty"`
	Tolerations       []corev1.Toleration               `json:"t,omitempty"`
	Spread            []corev1.TopologySpreadConstraint `json:"s,omitempty"`
	Containers        []containerFields                 `json:"c"`
	InitContainers    []containerFields                 `json:"i,omitempty"`
	Resources         *corev1.ResourceRequirements      `json:"r,omitempty"`
	Overhead          corev1.ResourceList               `json:"oh,omitempty"`
	Volumes           []corev1.Volume                   `json:"v,omitempty"`
	Priority          *int32                            `json:"p,omitempty"`
	PriorityClassName string                            `json:"pc,omitempty"`
	SchedulerName     string                            `json:"sn,omitempty"`
	HostNetwork       bool                              `json:"hn,omitempty"`
	HostUsers         *bool                             `json:"hu,omitempty"`
	RuntimeClassName  *string                           `json:"rc,omitempty"`
	ResourceClaims    []corev1.PodResourceClaim         `json:"rcl,omitempty"`
	SchedulingGates   []corev1.PodSchedulingGate        `json:"sg,omitempty"`
	SchedulingGroup   *corev1.PodSchedulingGroup        `json:"sgr,omitempty"`
	OS                *corev1.PodOS                     `json:"os,omitempty"`
	Annotations       map[string]string                 `json:"an,omitempty"`
}

type containerFields struct {
	Resources     corev1.ResourceRequirements    `json:"r"`
	Ports         []corev1.ContainerPort         `json:"p,omitempty"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"rp,omitempty"`
	RestartRules  []corev1.ContainerRestartRule  `json:"rr,omitempty"`
}

// EquivalenceKey hashes the fields that decide where a pod can run.
func EquivalenceKey(p *corev1.Pod) string {
	f := schedulingFields{
		Owner: controllerUID(p), Namespace: p.Namespace, Labels: p.Labels,
		NodeSelector: p.Spec.NodeSelector, Affinity: p.Spec.Affinity, Tolerations: p.Spec.Tolerations,
		Spread: p.Spec.TopologySpreadConstraints, Resources: p.Spec.Resources, Overhead: p.Spec.Overhead,
		Volumes: schedulingVolumes(p.Spec.Volumes), Priority: p.Spec.Priority, PriorityClassName: p.Spec.PriorityClassName,
		SchedulerName: p.Spec.SchedulerName, HostNetwork: p.Spec.HostNetwork, HostUsers: p.Spec.HostUsers,
		RuntimeClassName: p.Spec.RuntimeClassName, ResourceClaims: p.Spec.ResourceClaims,
		SchedulingGates: p.Spec.SchedulingGates, SchedulingGroup: p.Spec.SchedulingGroup, OS: p.Spec.OS,
		Annotations: schedulingAnnotations(p.Annotations),
	}
	f.Containers = containers(p.Spec.Containers)
	f.InitContainers = containers(p.Spec.InitContainers)
	raw, err := json.Marshal(f)
	if err != nil {
		// Unreachable for API objects; fall back to a per-pod key.
		return "pod/" + string(p.UID) + "/" + p.Namespace + "/" + p.Name
	}
	h := fnv.New128a()
	h.Write(raw)
	return strconv.Quote(string(h.Sum(nil)))
}

func containers(cs []corev1.Container) []containerFields {
	out := make([]containerFields, len(cs))
	for i, c := range cs {
		out[i] = containerFields{Resources: c.Resources, Ports: c.Ports, RestartPolicy: c.RestartPolicy, RestartRules: c.RestartPolicyRules}
	}
	return out
}

// schedulingVolumes drops the volumes no scheduler plugin and no drain rule
// reads: their names are often generated per pod (the ServiceAccount
// admission's kube-api-access-<random>), and keeping them would put every
// pod in a group of its own. Claims, inline disks, CSI, ephemeral, host
// path and emptyDir volumes stay.
func schedulingVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		if s := v.VolumeSource; s.Projected == nil && s.ConfigMap == nil && s.Secret == nil && s.DownwardAPI == nil {
			out = append(out, v)
		}
	}
	return out
}

// schedulingAnnotations keeps the annotations that change how tidal treats
// a pod (its safe-to-evict and scale-up delay settings), sorted for a
// stable key.
func schedulingAnnotations(a map[string]string) map[string]string {
	var keys []string
	for k := range a {
		if len(k) > len(annotationPrefix) && k[:len(annotationPrefix)] == annotationPrefix {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = a[k]
	}
	return out
}

const annotationPrefix = "cluster-autoscaler.kubernetes.io/"

func controllerUID(p *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.UID
	}
	return ""
}
