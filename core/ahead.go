package core

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// Workload is a scale target whose pods the node loop can picture before
// they exist: its pod template and the selector its pods match.
type Workload struct {
	Kind, Namespace, Name string
	UID                   types.UID
	Template              *corev1.PodTemplateSpec
	Selector              labels.Selector
}

func (w Workload) key() string { return w.pictured().Key() }

func (w Workload) pictured() scaleup.Pictured {
	return scaleup.Pictured{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Template: w.Template}
}

// Annotations on the pods the node loop pictures; see package scaleup.
const (
	AheadOfAnnotation    = scaleup.AheadOfAnnotation
	HeadroomOfAnnotation = scaleup.HeadroomOfAnnotation
	HeadroomAnnotation   = scaleup.HeadroomAnnotation
)

// aheadTTL is how long an expectation is kept when its pods do not appear.
const aheadTTL = 2 * time.Minute

// expectations are the replica counts the pod loop just asked for: the
// node loop plans nodes for the pods that do not exist yet, and forgets an
// expectation once its pods exist (then they count as themselves, never
// twice) or after aheadTTL.
type expectations struct {
	mu    sync.Mutex
	byKey map[string]*expectation
	// sources maps the annotation value of pictured pods to the object
	// events about them go to (the autoscaler, or the headroom workload).
	sources map[string]*corev1.ObjectReference
}

type expectation struct {
	workload Workload
	replicas int32
	source   *corev1.ObjectReference
	expires  time.Time
	// satisfied is set once every expected pod existed: nothing more is
	// pictured, but the expectation is kept until it expires so that the
	// scale-up for its real pods is told to the autoscaler too.
	satisfied bool
}

func newExpectations() *expectations {
	return &expectations{byKey: map[string]*expectation{}, sources: map[string]*corev1.ObjectReference{}}
}

// source is the object events about a pictured pod go to.
// source is the object events about a pod go to when the node loop acts
// for a source's sake: the autoscaler whose expectation covers the pod
// (pictured, or real and matching the workload's selector), or the
// workload that wants headroom. Nil for other pods.
func (e *expectations) source(p *corev1.Pod) *corev1.ObjectReference {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range []string{AheadOfAnnotation, HeadroomOfAnnotation} {
		if v, ok := p.Annotations[a]; ok {
			return e.sources[v]
		}
	}
	for _, x := range e.byKey {
		if x.workload.Namespace == p.Namespace && x.workload.Selector.Matches(labels.Set(p.Labels)) {
			return x.source
		}
	}
	return nil
}

// ProvisionAhead tells the node loop that w will have replicas pods because
// source (an autoscaler) asked for them, and runs an iteration at once.
func (l *NodeLoop) ProvisionAhead(ctx context.Context, w Workload, replicas int32, source *corev1.ObjectReference) {
	if !l.opts.ProvisionAhead || w.Template == nil || w.Selector == nil {
		return
	}
	src := source.Kind + " " + source.Namespace + "/" + source.Name
	l.d.ahead.mu.Lock()
	l.d.ahead.byKey[w.key()] = &expectation{workload: w, replicas: replicas, source: source, expires: l.clock.Now().Add(aheadTTL)}
	l.d.ahead.sources[src] = source
	l.d.ahead.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Provisioning ahead", "workload", w.key(), "replicas", replicas)
	select {
	case l.urgent <- struct{}{}:
	default:
	}
}

// ForgetAhead drops the expectation of a workload the pod loop scaled
// down: none of its pods are to be pictured any more.
func (l *NodeLoop) ForgetAhead(w Workload) {
	l.d.ahead.mu.Lock()
	defer l.d.ahead.mu.Unlock()
	delete(l.d.ahead.byKey, w.key())
}

// aheadPods pictures the pods of every expectation that do not exist yet
// (scaleup.AheadPods), and forgets the expired expectations.
func (ob *observer) aheadPods(now time.Time) []*corev1.Pod {
	ob.ahead.mu.Lock()
	defer ob.ahead.mu.Unlock()
	exps := make(map[string]scaleup.Expectation, len(ob.ahead.byKey))
	for key, e := range ob.ahead.byKey {
		x := scaleup.Expectation{Workload: e.workload.pictured(), Replicas: e.replicas, Expires: e.expires, Satisfied: e.satisfied,
			Source: e.source.Kind + " " + e.source.Namespace + "/" + e.source.Name}
		if !e.satisfied {
			x.Existing = ob.existingPods(e.workload, now)
		}
		exps[key] = x
	}
	ahead := scaleup.AheadPods(exps, now)
	for _, key := range ahead.Expired {
		delete(ob.ahead.byKey, key)
	}
	for _, key := range ahead.Satisfied {
		ob.ahead.byKey[key].satisfied = true
	}
	return ahead.Pods
}

// existingPods counts, at now, the workload's pods that exist, are not
// going away and are seen by the decision (scaleup.Seen): those count as
// themselves.
func (ob *observer) existingPods(w Workload, now time.Time) int32 {
	pods, err := ob.pods.Pods(w.Namespace).List(w.Selector)
	if err != nil {
		return 0
	}
	n := int32(0)
	for _, p := range pods {
		if p.DeletionTimestamp == nil && !isTerminal(p) && scaleup.Seen(p, now, ob.opts.NewPodScaleUpDelay) {
			n++
		}
	}
	return n
}

// pictured reports whether a pod exists only in the node loop's mind.
func pictured(p *corev1.Pod) bool { return scaleup.IsPictured(p) }
