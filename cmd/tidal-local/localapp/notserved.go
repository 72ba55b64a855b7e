package localapp

// PodAutoscalers tidal-local does not drive. Its pod loop drives
// HorizontalPodAutoscalers unless --hpa-objects is set (the local cluster
// runs no HPA controller), and then tidal serves no PodAutoscaler: each
// one is told so, rather than ignored, with ScalingActive=False (reason
// NotServed), a Warning event and a line of the timeline, once.

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// ReasonNotServed is the reason of the condition and the event.
const ReasonNotServed = "NotServed"

// notServedMessage says why and what to do.
const notServedMessage = "tidal-local drives HorizontalPodAutoscalers (--hpa-objects, on unless set, as the local " +
	"cluster runs no HPA controller), not PodAutoscalers: this one is not served; run tidal-local with " +
	"--hpa-objects=false to drive PodAutoscalers"

// notServed reports whether pa already says it is not served.
func notServed(pa *v1alpha1.PodAutoscaler) bool {
	for _, c := range pa.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse && c.Reason == ReasonNotServed {
			return true
		}
	}
	return false
}

// markNotServed sets pa's ScalingActive condition to False, NotServed,
// keeping its other conditions.
func markNotServed(pa *v1alpha1.PodAutoscaler, now metav1.Time) {
	c := autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
		Reason: ReasonNotServed, Message: notServedMessage, LastTransitionTime: now}
	for i := range pa.Status.Conditions {
		if pa.Status.Conditions[i].Type == autoscalingv2.ScalingActive {
			pa.Status.Conditions[i] = c
			return
		}
	}
	pa.Status.Conditions = append(pa.Status.Conditions, c)
}

// notServedRefuser tells each PodAutoscaler it is not served.
type notServedRefuser struct {
	client kubernetes.Interface
	pas    *v1alpha1.Client
	note   func(format string, args ...any)
	// told are the PodAutoscalers (by UID) given the event.
	told map[types.UID]bool
}

// refusePodAutoscalers tells every PodAutoscaler, now and as they come, that
// tidal-local does not serve it, until the returned stop is called.
func refusePodAutoscalers(ctx context.Context, client kubernetes.Interface, pas *v1alpha1.Client, note func(string, ...any)) (stop func()) {
	r := &notServedRefuser{client: client, pas: pas, note: note, told: map[types.UID]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); repeat(ctx, simLoadInterval, r.sync) }()
	return func() { cancel(); <-done }
}

// sync marks the PodAutoscalers not yet marked, and records the event on
// each the first time. A failed list or write is noted and tried again at
// the next sync.
func (r *notServedRefuser) sync(ctx context.Context) {
	list, err := r.pas.PodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		if ctx.Err() == nil {
			r.note("PodAutoscalers: cannot list them to say they are not served: %v", err)
		}
		return
	}
	for i := range list.Items {
		pa := &list.Items[i]
		if !notServed(pa) {
			markNotServed(pa, metav1.Now())
			if _, err := r.pas.PodAutoscalers(pa.Namespace).UpdateStatus(ctx, pa, metav1.UpdateOptions{}); err != nil {
				r.note("PodAutoscaler %s/%s: cannot set its NotServed condition: %v", pa.Namespace, pa.Name, err)
				continue
			}
		}
		if !r.told[pa.UID] {
			if err := r.event(ctx, pa); err != nil {
				r.note("PodAutoscaler %s/%s: cannot record its NotServed event: %v", pa.Namespace, pa.Name, err)
				continue
			}
			r.told[pa.UID] = true
			r.note("PodAutoscaler %s/%s is not served: tidal-local drives HorizontalPodAutoscalers (--hpa-objects=false drives PodAutoscalers)", pa.Namespace, pa.Name)
		}
	}
}

// event records the Warning event on pa.
func (r *notServedRefuser) event(ctx context.Context, pa *v1alpha1.PodAutoscaler) error {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pa.Namespace, GenerateName: pa.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.Kind,
			Namespace: pa.Namespace, Name: pa.Name, UID: pa.UID, ResourceVersion: pa.ResourceVersion},
		Reason: ReasonNotServed, Message: notServedMessage, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "tidal-local"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if _, err := r.client.CoreV1().Events(pa.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create event: %w", err)
	}
	return nil
}
