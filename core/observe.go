package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// observer turns the informers' caches and the cloud into one observation
// per iteration. It decides nothing: which pods count, which group grows,
// which nodes go are decided from the observation by the decision packages.
type observer struct {
	cloud   cloudprovider.CloudProvider
	clock   clock.Clock
	metrics *Metrics
	opts    Options
	// live is the scheduler snapshot the informers' events keep current.
	live *liveSnapshot
	// ahead are the pod loop's expectations (provision-ahead); events warn
	// workloads whose headroom annotation is malformed.
	ahead  *expectations
	events *telemetry.Events
	// templates is what is kept of each group's template between
	// iterations.
	templates map[string]groupTemplateState
	// ownerKeys are the controllers of each candidate's pods, kept while
	// its NodeInfo's generation stays (see owners).
	ownerKeys map[string]nodeOwners

	pods         corelisters.PodLister
	daemonSets   appslisters.DaemonSetLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	replicaSets  appslisters.ReplicaSetLister
	rcs          corelisters.ReplicationControllerLister
	jobs         batchlisters.JobLister
	pdbs         policylisters.PodDisruptionBudgetLister
}

// observation is one iteration's view of the cluster and the cloud.
type observation struct {
	now time.Time
	// nodes are the nodes of the snapshot, so that what the loop counts
	// and what the simulation places pods on are one view.
	nodes []*corev1.Node
	// observed are the nodes as the cluster state sees them, by name: not
	// ready while their Ready condition is not True or a startup taint is
	// on.
	observed map[string]clusterstate.NodeObservation
	// pending are the pods waiting for a node, unschedulable counts those
	// the scheduler already failed to place, unprocessed those it has not
	// tried yet.
	pending                    []*corev1.Pod
	unschedulable, unprocessed int
	// headroom are the pictured pods that keep room for workloads'
	// headroom (they are among pending too).
	headroom []*corev1.Pod
	groups   []*groupObservation
	snapshot *simulator.Snapshot
	// groupOfNode maps node names to their group's ID ("" for nodes of no
	// group).
	groupOfNode map[string]string
	// pdbs are the cluster's PodDisruptionBudgets.
	pdbs []*policyv1.PodDisruptionBudget
}

type groupObservation struct {
	group     cloudprovider.NodeGroup
	target    int
	instances []cloudprovider.Instance
	template  *simulator.NodeTemplate
	// problem, when set, keeps the group from growing this iteration.
	problem string
}

// errCloud and errAPI classify failures for the errors metric.
var (
	errCloud = errors.New("cloud provider")
	errAPI   = errors.New("kubernetes api")
)

func errorType(err error) string {
	switch {
	case errors.Is(err, errCloud):
		return "cloudProviderError"
	case errors.Is(err, errAPI):
		return "apiCallError"
	}
	return "internalError"
}

func (ob *observer) observe(ctx context.Context) (*observation, error) {
	o := &observation{now: ob.clock.Now(), groupOfNode: map[string]string{}, observed: map[string]clusterstate.NodeObservation{}}
	if err := ob.timed("cloudProviderRefresh", func() error { return ob.cloud.Refresh(ctx) }); err != nil {
		return nil, fmt.Errorf("%w: refresh: %v", errCloud, err)
	}
	var err error
	if err := ob.timed("snapshotSync", func() error { o.snapshot, err = ob.live.Sync(); return err }); err != nil {
		return nil, fmt.Errorf("sync snapshot: %w", err)
	}
	for _, ni := range o.snapshot.Infos() {
		n := ni.Node()
		o.nodes = append(o.nodes, n)
		obs := ob.opts.Taints.Observe(n)
		o.observed[n.Name] = obs
		if !obs.Ready {
			klog.FromContext(ctx).V(4).Info("Node not ready", "node", n.Name, "reason", obs.NotReady)
		}
	}
	pods, err := ob.pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("%w: list pods: %v", errAPI, err)
	}
	for _, p := range pods {
		if ob.waits(p, o.snapshot) {
			o.pending = append(o.pending, p)
			if IsUnschedulable(p) {
				o.unschedulable++
			} else {
				o.unprocessed++
			}
		}
	}
	o.pending = append(o.pending, ob.aheadPods(o.now)...)
	o.headroom = ob.headroomPods()
	o.pending = append(o.pending, o.headroom...)
	if o.pdbs, err = ob.pdbs.List(labels.Everything()); err != nil {
		return nil, fmt.Errorf("%w: list pod disruption budgets: %v", errAPI, err)
	}
	daemonSets, err := ob.daemonSets.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("%w: list daemonsets: %v", errAPI, err)
	}
	live := map[string][]*corev1.Node{}
	for _, n := range o.nodes {
		g, err := ob.cloud.NodeGroupForNode(n)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Node group of node unknown", "node", n.Name, "err", err)
			continue
		}
		if g != nil {
			o.groupOfNode[n.Name] = g.Id()
			live[g.Id()] = append(live[g.Id()], n)
		}
	}
	for _, g := range ob.cloud.NodeGroups() {
		o.groups = append(o.groups, ob.observeGroup(ctx, o, g, live[g.Id()], daemonSets))
	}
	ob.forgetTemplates(o.groups)
	return o, nil
}

// observeGroup reads a group from the cloud. A group the cloud cannot
// describe is kept, with the problem noted, so it is neither grown nor
// trusted this iteration.
func (ob *observer) observeGroup(ctx context.Context, o *observation, g cloudprovider.NodeGroup, nodes []*corev1.Node, daemonSets []*appsv1.DaemonSet) *groupObservation {
	gro := &groupObservation{group: g}
	var err error
	if gro.target, err = g.TargetSize(); err != nil {
		gro.problem = fmt.Sprintf("cannot read target size: %v", err)
	} else if gro.instances, err = g.Nodes(); err != nil {
		gro.problem = fmt.Sprintf("cannot list instances: %v", err)
	} else if gro.template, err = ob.groupTemplate(ctx, o, g, nodes, daemonSets); err != nil {
		gro.problem = fmt.Sprintf("cannot build template node: %v", err)
	}
	if gro.problem != "" {
		klog.FromContext(ctx).Error(err, "Node group not usable this iteration", "nodeGroup", g.Id())
	}
	return gro
}

// ready reports whether the node can run pods now.
func (o *observation) ready(name string) bool { return o.observed[name].Ready }

func (ob *observer) timed(function string, f func() error) error {
	start := ob.clock.Now()
	err := f()
	ob.metrics.Observe(function, ob.clock.Since(start))
	return err
}

// waits reports whether p waits for a node in this iteration: pending, or
// nominated to a node the cluster does not have. A pod the synced snapshot
// still counts on a node changed after the sync (its nomination was
// cleared): it waits from the next iteration on, and is not counted twice
// in this one.
func (ob *observer) waits(p *corev1.Pod, snap *simulator.Snapshot) bool {
	return IsPending(p) && !ob.live.holds(p.UID) || nominatedToMissing(p, snap)
}

// nominatedToMissing reports whether p would be pending but for its
// nomination to a node the cluster does not have (it went before the pod
// was bound): then it waits for a node like any other.
func nominatedToMissing(p *corev1.Pod, snap *simulator.Snapshot) bool {
	return p.Status.NominatedNodeName != "" && snap.NodeInfo(p.Status.NominatedNodeName) == nil && pendingButForNomination(p)
}

// pendingButForNomination reports whether p would be pending without its
// nominated node.
func pendingButForNomination(p *corev1.Pod) bool {
	q := *p
	q.Status.NominatedNodeName = ""
	return IsPending(&q)
}
