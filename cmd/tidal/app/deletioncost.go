package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
)

// deletionCostTimeout bounds the cost writes of one scale-down: the scale
// write waits for them.
const deletionCostTimeout = 10 * time.Second

// newDeletionCostWrites is tidal_pod_deletion_cost_writes_total.
func newDeletionCostWrites(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidal_pod_deletion_cost_writes_total",
		Help: "Writes of pod-deletion-cost on replicas before a scale-down, by result (success, conflict, error).",
	}, []string{"result"})
	reg.MustRegister(c)
	return c
}

// deletionCost sets pod-deletion-cost on a workload's replicas before the
// pod loop scales it down, from the node loop's scale-in view.
type deletionCost struct {
	pods   controller.PodLister
	client kubernetes.Interface
	// nodes is the node loop's view (core.NodeLoop.ScaleInNodes).
	nodes  func() ([]scalein.Node, time.Time)
	writes *prometheus.CounterVec
}

// beforeScaleDown is the pod loop's BeforeScaleDown hook. Only Deployments
// and ReplicaSets choose replicas by cost (a StatefulSet removes its
// highest ordinals). Without a view of the nodes nothing is written. A
// failed write is counted and returned; the scale-down goes on.
func (d *deletionCost) beforeScaleDown(ctx context.Context, r controller.Rescale) error {
	if r.Target.Kind != "Deployment" && r.Target.Kind != "ReplicaSet" {
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
func (d *deletionCost) write(ctx context.Context, ns string, pods []*corev1.Pod, patches []scalein.Patch) (int, error) {
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
			_, err = d.client.CoreV1().Pods(ns).Patch(ctx, p.Pod, types.MergePatchType, body, metav1.PatchOptions{})
		}
		switch {
		case err == nil:
			written++
			d.writes.WithLabelValues("success").Inc()
		case apierrors.IsConflict(err):
			d.writes.WithLabelValues("conflict").Inc()
			errs = append(errs, fmt.Errorf("pod %s/%s changed since it was read: %w", ns, p.Pod, err))
		default:
			d.writes.WithLabelValues("error").Inc()
			errs = append(errs, fmt.Errorf("set deletion cost on pod %s/%s: %w", ns, p.Pod, err))
		}
	}
	return written, errors.Join(errs...)
}
