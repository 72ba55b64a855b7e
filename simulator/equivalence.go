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

// EquivalenceKeys computes and caches each pod's equivalence key. Keys are
// kept per pod UID and resourceVersion, so pods pending for many loops are
// hashed once. It is not safe for concurrent use.
type EquivalenceKeys struct {
	cache map[types.UID]cachedKey
	used  map[types.UID]bool
}

type cachedKey struct {
	resourceVersion string
	key             string
}

// NewEquivalenceKeys returns an empty key cache.
func NewEquivalenceKeys() *EquivalenceKeys {
	return &EquivalenceKeys{cache: map[types.UID]cachedKey{}, used: map[types.UID]bool{}}
}

// Group splits pods into equivalence groups, in the order each group's
// first pod appears. Keys of pods not seen in this call are forgotten.
func (k *EquivalenceKeys) Group(pods []*corev1.Pod) []*PodGroup {
	byKey := map[string]*PodGroup{}
	var groups []*PodGroup
	clear(k.used)
	for _, p := range pods {
		key := k.key(p)
		k.used[p.UID] = true
		g, ok := byKey[key]
		if !ok {
			g = &PodGroup{Key: key, Owner: controllerUID(p)}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.Pods = append(g.Pods, p)
	}
	for uid := range k.cache {
		if !k.used[uid] {
			delete(k.cache, uid)
		}
	}
	return groups
}

func (k *EquivalenceKeys) key(p *corev1.Pod) string {
	if c, ok := k.cache[p.UID]; ok && c.resourceVersion == p.ResourceVersion && p.UID != "" {
		return c.key
	}
	key := EquivalenceKey(p)
	if p.UID != "" {
		k.cache[p.UID] = cachedKey{resourceVersion: p.ResourceVersion, key: key}
	}
	return key
}

// schedulingFields is what makes two pods schedule differently. Names,
// node name and status are left out.
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
	RuntimeClassName  *string                           `json:"rc,omitempty"`
	ResourceClaims    []corev1.PodResourceClaim         `json:"rcl,omitempty"`
	SchedulingGates   []corev1.PodSchedulingGate        `json:"sg,omitempty"`
	OS                *corev1.PodOS                     `json:"os,omitempty"`
	ReadinessGates    []corev1.PodReadinessGate         `json:"rg,omitempty"`
	Annotations       map[string]string                 `json:"an,omitempty"`
}

type containerFields struct {
	Resources     corev1.ResourceRequirements    `json:"r"`
	Ports         []corev1.ContainerPort         `json:"p,omitempty"`
	RestartPolicy *corev1.ContainerRestartPolicy `json:"rp,omitempty"`
}

// EquivalenceKey hashes the fields that decide where a pod can run.
func EquivalenceKey(p *corev1.Pod) string {
	f := schedulingFields{
		Owner: controllerUID(p), Namespace: p.Namespace, Labels: p.Labels,
		NodeSelector: p.Spec.NodeSelector, Affinity: p.Spec.Affinity, Tolerations: p.Spec.Tolerations,
		Spread: p.Spec.TopologySpreadConstraints, Resources: p.Spec.Resources, Overhead: p.Spec.Overhead,
		Volumes: p.Spec.Volumes, Priority: p.Spec.Priority, PriorityClassName: p.Spec.PriorityClassName,
		SchedulerName: p.Spec.SchedulerName, HostNetwork: p.Spec.HostNetwork, RuntimeClassName: p.Spec.RuntimeClassName,
		ResourceClaims: p.Spec.ResourceClaims, SchedulingGates: p.Spec.SchedulingGates, OS: p.Spec.OS,
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
		out[i] = containerFields{Resources: c.Resources, Ports: c.Ports, RestartPolicy: c.RestartPolicy}
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
