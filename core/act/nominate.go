package act

// Nominations: the node loop tells the scheduler which node a scale-up
// planned for a pending pod by its status.nominatedNodeName, which the
// scheduler tries first (KEP-5278).

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/nominate"
)

// nominationPatch is the merge patch of a pod's status that sets its
// nominated node (node "" clears it): the only field tidal writes in a
// pod's status, which the admission policy shipped with the manifests
// holds it to. The pod's UID is a precondition: the API server refuses the
// patch (409) for a pod of the same name created since.
func nominationPatch(uid types.UID, node string) ([]byte, error) {
	var value any
	if node != "" {
		value = node
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": string(uid)},
		"status":   map[string]any{"nominatedNodeName": value},
	})
}

// nominationWriters bounds the nomination patches in flight at once. The
// scheduler clears the nominations of every pod it tries and finds no node
// for, which it does whenever a node registers or loses a taint: until
// they are set again, the pods a starting node was planned for hold no room
// there, and the next node to become ready may take other pods in their
// stead. Written one after another, 20 nominations took a second on a
// loaded API server; in parallel, about the time of one.
const nominationWriters = 8

// Nominate writes the nominations, clears first (all of them before any
// set), and returns those whose write failed, in order. Each is one patch
// of the pod's status subresource; up to nominationWriters are in flight
// at once (the client's rate limiter still applies).
func (a *Live) Nominate(ctx context.Context, clear, set []nominate.Change) []nominate.Change {
	return append(a.nominateAll(ctx, clear), a.nominateAll(ctx, set)...)
}

// nominateAll writes the changes in parallel and returns the failed ones.
func (a *Live) nominateAll(ctx context.Context, changes []nominate.Change) []nominate.Change {
	ok := make([]bool, len(changes))
	sem := make(chan struct{}, nominationWriters)
	var wg sync.WaitGroup
	for i, c := range changes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ok[i] = a.nominateOne(ctx, c)
		})
	}
	wg.Wait()
	var failed []nominate.Change
	for i, c := range changes {
		if !ok[i] {
			failed = append(failed, c)
		}
	}
	return failed
}

// nominateOne writes one change, logs and counts it, and tells whether it
// was written.
func (a *Live) nominateOne(ctx context.Context, c nominate.Change) bool {
	result := "set"
	if c.Node == "" {
		result = "cleared"
	}
	if err := a.patchNomination(ctx, c); err != nil {
		klog.FromContext(ctx).Error(err, "Could not write a pod's nominated node", "pod", klog.KRef(c.Namespace, c.Name), "node", c.Node)
		a.Metrics.Nominations.WithLabelValues("failed").Inc()
		return false
	}
	klog.FromContext(ctx).V(2).Info("Nominated node "+result, "pod", klog.KRef(c.Namespace, c.Name), "node", c.Node)
	a.Metrics.Nominations.WithLabelValues(result).Inc()
	return true
}

func (a *Live) patchNomination(ctx context.Context, c nominate.Change) error {
	return NominateWith(ctx, a.Client, c)
}

// NominateWith writes one nomination with client, as the live actuator does
// (for the test of the admission policy that confines it).
func NominateWith(ctx context.Context, client kubernetes.Interface, c nominate.Change) error {
	patch, err := nominationPatch(c.UID, c.Node)
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Pods(c.Namespace).Patch(ctx, c.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: "tidal"}, "status")
	if err != nil {
		return fmt.Errorf("patch status of pod %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// Nominate records the nominations the loop would have written; none is.
func (a *DryRun) Nominate(ctx context.Context, clear, set []nominate.Change) []nominate.Change {
	for _, c := range append(append([]nominate.Change(nil), clear...), set...) {
		if !a.dry.note(fmt.Sprintf("nominate/%s/%s/%s", c.Namespace, c.Name, c.Node)) {
			continue
		}
		klog.FromContext(ctx).Info("Dry run: would write a pod's nominated node", "pod", klog.KRef(c.Namespace, c.Name), "node", c.Node)
	}
	return nil
}
