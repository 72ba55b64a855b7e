package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// Events on Cluster Autoscaler's Lease when the node loop stops and
// resumes for it.
const (
	EventClusterAutoscalerActive = "ClusterAutoscalerActive"
	EventClusterAutoscalerGone   = "ClusterAutoscalerGone"
)

// caDefaultLeaseDuration is Cluster Autoscaler's
// --leader-elect-lease-duration, for a Lease that does not say its own.
const caDefaultLeaseDuration = 15 * time.Second

// RivalHold is who holds another autoscaler's Lease, and until when the
// hold lasts if it is not renewed.
type RivalHold struct {
	Holder string
	Until  time.Time
}

// RivalHolds decides whether lease (nil: none) is held by a running
// autoscaler at now: it names a holder and was renewed within its duration.
// A Lease released (no holder, as client-go writes on a clean shutdown) or
// left to lapse holds nothing. A holder without any renew or acquire time
// holds until someone writes the Lease again: nothing tells that it stopped.
func RivalHolds(lease *coordinationv1.Lease, now time.Time) (RivalHold, bool) {
	if lease == nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return RivalHold{}, false
	}
	hold := RivalHold{Holder: *lease.Spec.HolderIdentity}
	renewed := lease.Spec.RenewTime
	if renewed == nil {
		renewed = lease.Spec.AcquireTime
	}
	if renewed == nil {
		return hold, true
	}
	d := caDefaultLeaseDuration
	if s := lease.Spec.LeaseDurationSeconds; s != nil && *s > 0 {
		d = time.Duration(*s) * time.Second
	}
	hold.Until = renewed.Add(d)
	return hold, now.Before(hold.Until)
}

// rivalWatch reads Cluster Autoscaler's Lease before each iteration and
// tells the loop to stand aside while it is held; it logs and records an
// event when that starts and when it ends.
type rivalWatch struct {
	client    kubernetes.Interface
	namespace string
	name      string
	clock     clock.Clock
	events    *telemetry.Events

	mu      sync.Mutex
	holding bool
}

// newRivalWatch watches namespace/name; an empty name watches nothing.
func newRivalWatch(client kubernetes.Interface, namespace, name string, c clock.Clock, e *telemetry.Events) *rivalWatch {
	return &rivalWatch{client: client, namespace: namespace, name: name, clock: c, events: e}
}

// standAside reports whether the loop must not act now: Cluster
// Autoscaler holds its Lease, or the Lease cannot be read (then the error
// says why).
func (w *rivalWatch) standAside(ctx context.Context) (bool, error) {
	if w == nil || w.name == "" || w.client == nil {
		return false, nil
	}
	lease, err := w.client.CoordinationV1().Leases(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease, err = nil, nil
	}
	if err != nil {
		return true, fmt.Errorf("read Cluster Autoscaler's Lease %s/%s (the node loop does not act while it cannot tell whether Cluster Autoscaler runs; "+
			"grant get on it, or turn the check off with --cluster-autoscaler-lease=\"\"): %w", w.namespace, w.name, err)
	}
	hold, held := RivalHolds(lease, w.clock.Now())
	w.transition(ctx, lease, hold, held)
	return held, nil
}

// transition logs and records the start and the end of a hold, once each.
func (w *rivalWatch) transition(ctx context.Context, lease *coordinationv1.Lease, hold RivalHold, held bool) {
	w.mu.Lock()
	changed := held != w.holding
	w.holding = held
	w.mu.Unlock()
	if !changed {
		return
	}
	logger := klog.FromContext(ctx)
	ref := w.namespace + "/" + w.name
	if held {
		logger.Info("Cluster Autoscaler holds its Lease: the node loop does not scale up or down until the Lease lapses or is released; scale Cluster Autoscaler to zero to hand over",
			"lease", ref, "holder", hold.Holder, "until", hold.Until)
		if lease != nil {
			w.events.OnObject(lease, string(lease.UID), corev1.EventTypeWarning, EventClusterAutoscalerActive,
				"Cluster Autoscaler (%s) holds Lease %s: tidal's node loop does not act until it lapses", hold.Holder, ref)
		}
		return
	}
	logger.Info("Cluster Autoscaler's Lease is no longer held: the node loop acts again", "lease", ref)
	if lease != nil {
		w.events.OnObject(lease, string(lease.UID), corev1.EventTypeNormal, EventClusterAutoscalerGone,
			"Lease %s is no longer held: tidal's node loop acts again", ref)
	}
}
