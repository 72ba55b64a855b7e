package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/scalein"
)

// deletionCostTimeout bounds the cost writes of one scale-down: the scale
// write waits for them.
const deletionCostTimeout = 10 * time.Second

// Results of tidal_pod_deletion_cost_writes_total.
const (
	costWritten  = "success"
	costConflict = "conflict"
	costFailed   = "error"
)

// deletionCosts sets pod-deletion-cost on a workload's replicas before the
// pod loop scales it down, from the node loop's scale-in view; which
// replicas go is scalein's decision.
type deletionCosts struct {
	pods   PodLister
	client corev1client.PodsGetter
	// nodes is the node loop's scale-in view and when it was taken.
	nodes    func() ([]scalein.Node, time.Time)
	observer *Observer
}

// beforeScaleDown writes the costs for r. Only Deployments and ReplicaSets
// choose replicas by cost. Without a view of the nodes nothing is written.
// A failed write is counted and returned; the scale-down goes on.
func (d *deletionCosts) beforeScaleDown(ctx context.Context, r Rescale) error {
	if !scalein.ChoosesByCost(r.Target.Kind) {
		return nil
	}
	logger := klog.FromContext(ctx)
	nodes, at := d.nodes()
	if nodes == nil {
		logger.V(2).Info("No scale-down plan yet: replicas to remove are left to the ReplicaSet", "namespace", r.Namespace, "target", r.Target.Name)
		return nil
	}
	sel, err := labels.Parse(r.Selector)
	if err != nil {
		return fmt.Errorf("selector %q of %s %s/%s: %w", r.Selector, r.Target.Kind, r.Namespace, r.Target.Name, err)
	}
	pods, err := d.pods.List(r.Namespace, sel)
	if err != nil {
		return fmt.Errorf("list pods of %s %s/%s: %w", r.Target.Kind, r.Namespace, r.Target.Name, err)
	}
	patches := scalein.Decide(nodes, scalein.Replicas(pods), int(r.From-r.To))
	if len(patches) == 0 {
		return nil
	}
	written, err := d.write(ctx, r.Namespace, pods, patches)
	logger.V(2).Info("Pod deletion costs written", "namespace", r.Namespace, "target", r.Target.Name,
		"written", written, "wanted", len(patches), "nodesSeenAt", at)
	return err
}

// write patches the costs, the replicas to go first first, within
// deletionCostTimeout. It returns how many it wrote and the failures.
func (d *deletionCosts) write(ctx context.Context, ns string, pods []*corev1.Pod, patches []scalein.Patch) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, deletionCostTimeout)
	defer cancel()
	versions := make(map[string]string, len(pods))
	for _, p := range pods {
		versions[p.Name] = p.ResourceVersion
	}
	written := 0
	var errs []error
	for _, p := range patches {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("%d of %d pod deletion cost(s) not written: %w", len(patches)-written-len(errs), len(patches), ctx.Err()))
			break
		}
		body, err := scalein.MergePatch(p, versions[p.Pod])
		if err == nil {
			_, err = d.client.Pods(ns).Patch(ctx, p.Pod, types.MergePatchType, body, metav1.PatchOptions{})
		}
		switch {
		case err == nil:
			written++
			d.observer.deletionCostWritten(costWritten)
		case apierrors.IsConflict(err):
			d.observer.deletionCostWritten(costConflict)
			errs = append(errs, fmt.Errorf("pod %s/%s changed since it was read: %w", ns, p.Pod, err))
		default:
			d.observer.deletionCostWritten(costFailed)
			errs = append(errs, fmt.Errorf("set deletion cost on pod %s/%s: %w", ns, p.Pod, err))
		}
	}
	return written, errors.Join(errs...)
}
