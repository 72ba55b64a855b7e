package scaleup

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Annotations on the pods the node loop pictures (they never reach the API
// server; the annotations say where they come from in status and logs).
const (
	// AheadOfAnnotation marks a pod expected from a rescale, with the
	// autoscaler that decided it.
	AheadOfAnnotation = "tidal.dev/provision-ahead-for"
	// HeadroomOfAnnotation marks a headroom pod, with its workload.
	HeadroomOfAnnotation = "tidal.dev/headroom-for"
	// ReplacementOfAnnotation marks a copy of a pod on a node the cloud
	// takes away, with the node: capacity for it is asked for before it
	// is evicted.
	ReplacementOfAnnotation = "tidal.dev/replacement-for"
	// HeadroomAnnotation, on a Deployment or StatefulSet, asks the node
	// loop to keep room for that many more replicas.
	HeadroomAnnotation = "autoscaling.tidal.dev/headroom-replicas"
)

// MaxHeadroom bounds the headroom one workload may ask for.
const MaxHeadroom = 1000

// Pictured is a workload whose pods that do not exist yet the node loop
// pictures: its identity and pod template.
type Pictured struct {
	Kind, Namespace, Name string
	Template              *corev1.PodTemplateSpec
}

// Key names the workload.
func (w Pictured) Key() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// PicturePods are n pods of w's template that do not exist, of the given
// kind ("ahead", "headroom"): named after the workload, with stable UIDs
// (so their equivalence key is computed once), annotation set to value,
// and priority, when set, instead of the template's.
func PicturePods(w Pictured, kind string, n int, annotation, value string, priority *int32) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, n)
	for i := 0; i < n; i++ {
		p := &corev1.Pod{ObjectMeta: *w.Template.ObjectMeta.DeepCopy(), Spec: *w.Template.Spec.DeepCopy()}
		p.Namespace, p.Name = w.Namespace, fmt.Sprintf("%s-%s-%d", w.Name, kind, i)
		p.UID = types.UID(fmt.Sprintf("tidal-%s/%s/%d", kind, w.Key(), i))
		p.ResourceVersion = "1"
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[annotation] = value
		if priority != nil {
			p.Spec.Priority = ptr.To(*priority)
		}
		out = append(out, p)
	}
	return out
}

// IsPictured reports whether a pod exists only in the node loop's mind.
func IsPictured(p *corev1.Pod) bool {
	_, ahead := p.Annotations[AheadOfAnnotation]
	_, headroom := p.Annotations[HeadroomOfAnnotation]
	_, replacement := p.Annotations[ReplacementOfAnnotation]
	return ahead || headroom || replacement
}

// Expectation is a replica count an autoscaler just asked for: the pods of
// Workload that do not exist yet are pictured until they all exist
// (Satisfied; then they count as themselves, never twice) or the
// expectation expires.
type Expectation struct {
	Workload Pictured
	Replicas int32
	// Source is the annotation value of the pictured pods: the autoscaler.
	Source    string
	Expires   time.Time
	Satisfied bool
	// Existing counts the workload's pods that exist and are not going
	// away (needed only while not Satisfied).
	Existing int32
}

// Ahead is what AheadPods made of the expectations.
type Ahead struct {
	// Pods are the pictured pods, by workload key.
	Pods []*corev1.Pod
	// Expired and Satisfied name, by workload key, the expectations to
	// forget and those whose pods now all exist.
	Expired, Satisfied []string
}

// AheadPods pictures, at now, the missing pods of every expectation (by
// workload key). An expectation past its expiry is to be forgotten; one
// whose pods all exist is satisfied: nothing more is pictured for it, but
// it is kept until it expires so that the scale-up for its real pods is
// told to the autoscaler too.
func AheadPods(exps map[string]Expectation, now time.Time) Ahead {
	keys := make([]string, 0, len(exps))
	for k := range exps {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	var out Ahead
	for _, k := range keys {
		e := exps[k]
		switch missing := e.Replicas - e.Existing; {
		case now.After(e.Expires):
			out.Expired = append(out.Expired, k)
		case e.Satisfied:
		case missing <= 0:
			out.Satisfied = append(out.Satisfied, k)
		default:
			out.Pods = append(out.Pods, PicturePods(e.Workload, "ahead", int(missing), AheadOfAnnotation, e.Source, nil)...)
		}
	}
	return out
}

// ParseHeadroom reads a HeadroomAnnotation value: a whole number of
// replicas from 0 to MaxHeadroom.
func ParseHeadroom(raw string) (int, error) {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 || n > MaxHeadroom {
		return 0, fmt.Errorf("annotation %s=%q: want a whole number of replicas from 0 to %d", HeadroomAnnotation, raw, MaxHeadroom)
	}
	return n, nil
}
