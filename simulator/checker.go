package simulator

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
)

// Checker answers "does this pod fit on that node" with the kube-scheduler
// framework's own PreFilter and Filter plugins, from the default scheduler
// profile, run against a Snapshot.
//
// Not simulated: dynamic resource claims (the DynamicResources plugin needs
// the scheduler's claim tracker), and pod groups (gang scheduling).
type Checker struct {
	fw       framework.Framework
	snapshot *Snapshot
	listers  Listers
	// lister is what the framework lists nodes from; nil, the snapshot
	// itself.
	lister *pluginLister
	// narrowing is held for writing while a PreFilter runs on the narrowed
	// lister (and may build the snapshot's label index), for reading by
	// every other PreFilter: PreFilters may run in parallel (the
	// scale-down plan checks pods ahead on every core), and one must
	// never list the nodes another narrowed for its own terms.
	narrowing sync.RWMutex
}

// disabledPlugins are left out of the simulation; see Checker.
var disabledPlugins = []string{names.DynamicResources}

// NewChecker builds the framework over snapshot. listers serve what the
// plugins read besides the snapshot; nil means none (no volumes, no
// namespace selectors). The framework gets no API client: the plugins
// only use one to bind (volumes, pods), which a simulation never does, so
// a check cannot write to the cluster.
func NewChecker(ctx context.Context, snapshot *Snapshot, listers Listers) (*Checker, error) {
	return newChecker(ctx, snapshot, listers, newPluginLister(snapshot))
}

// newChecker is NewChecker with the framework listing nodes from lister,
// or from the snapshot itself when lister is nil.
func newChecker(ctx context.Context, snapshot *Snapshot, listers Listers, lister *pluginLister) (*Checker, error) {
	var shared fwk.SharedLister = snapshot
	if lister != nil {
		shared = lister
	}
	if listers == nil {
		listers = newEmptyListers()
	}
	// The framework counts plugin calls in the scheduler's metrics, which
	// must exist first (registered once per process).
	schedulermetrics.Register()
	cfg, err := latest.Default()
	if err != nil {
		return nil, fmt.Errorf("default scheduler configuration: %w", err)
	}
	profile := cfg.Profiles[0]
	profile.Plugins.MultiPoint.Enabled = slices.DeleteFunc(profile.Plugins.MultiPoint.Enabled, func(p config.Plugin) bool {
		return slices.Contains(disabledPlugins, p.Name)
	})
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), &profile,
		frameworkruntime.WithSnapshotSharedLister(shared),
		frameworkruntime.WithInformerFactory(listers.Informers()),
		frameworkruntime.WithParallelism(1),
	)
	if err != nil {
		return nil, fmt.Errorf("scheduler framework: %w", err)
	}
	return &Checker{fw: fw, snapshot: snapshot, listers: listers, lister: lister}, nil
}

// Snapshot is the snapshot the checker reads.
func (c *Checker) Snapshot() *Snapshot { return c.snapshot }

// ListerVersion is the listers' version: with the snapshot's version it
// says whether a check's answer may have changed.
func (c *Checker) ListerVersion() uint64 { return c.listers.Version() }

// PodCheck is a pod's PreFilter result, reused for every node it is checked
// against. Pods that schedule the same (an equivalence group) share one.
type PodCheck struct {
	Pod *corev1.Pod
	// Info is the parsed pod; copies of it carry other pods of the group.
	Info   *framework.PodInfo
	state  *framework.CycleState
	result *fwk.PreFilterResult
	// Status is non-nil when PreFilter rejected the pod outright.
	Status *fwk.Status
}

// PreFilter runs the PreFilter plugins for pod against the snapshot as it
// is now.
func (c *Checker) PreFilter(ctx context.Context, pod *corev1.Pod) (*PodCheck, error) {
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return c.PreFilterInfo(ctx, info), nil
}

// PreFilterInfo is PreFilter for a pod already parsed, such as one taken
// from a node of the snapshot (its computed requests are reused).
func (c *Checker) PreFilterInfo(ctx context.Context, info *framework.PodInfo) *PodCheck {
	pc := &PodCheck{Pod: info.Pod, Info: info}
	c.refresh(ctx, pc)
	return pc
}

// Refresh reruns PreFilter, after changes to the snapshot that the
// incremental updates (AddPlaced) do not cover, such as new nodes in a
// topology domain not seen before.
func (c *Checker) Refresh(ctx context.Context, pc *PodCheck) { c.refresh(ctx, pc) }

func (c *Checker) refresh(ctx context.Context, pc *PodCheck) {
	pc.state = framework.NewCycleState()
	if c.lister != nil && narrows(pc.Pod) {
		c.narrowing.Lock()
		defer c.narrowing.Unlock()
		c.lister.narrow(pc.Pod)
		defer c.lister.widen()
	} else {
		c.narrowing.RLock()
		defer c.narrowing.RUnlock()
	}
	result, status, _ := c.fw.RunPreFilterPlugins(ctx, pc.state, pc.Pod)
	pc.result, pc.Status = result, nil
	if !status.IsSuccess() {
		pc.Status = status
	}
}

// Filter checks the pod against one node.
func (c *Checker) Filter(ctx context.Context, pc *PodCheck, ni fwk.NodeInfo) *fwk.Status {
	if pc.Status != nil {
		return pc.Status
	}
	if !pc.result.AllNodes() && !pc.result.NodeNames.Has(ni.Node().Name) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) PreFilter")
	}
	return c.fw.RunFilterPlugins(ctx, pc.state, pc.Pod, ni)
}

// Place binds a pod equivalent to pc.Pod (pod itself, or pc.Pod) to node in
// the snapshot, and updates pc's PreFilter state as if the pod had been
// there from the start, so pc stays valid for the next pod of its group.
func (c *Checker) Place(ctx context.Context, pc *PodCheck, pod *corev1.Pod, nodeName string) (Placed, error) {
	info := pc.Info
	if pod != nil && pod != pc.Pod {
		copied := *pc.Info
		copied.Pod = pod
		info = &copied
	}
	if err := c.snapshot.AddPod(info, nodeName); err != nil {
		return Placed{}, err
	}
	if pc.Status == nil && hardSpread(pc.Pod) {
		// The spread plugin's incremental update tracks only the two
		// emptiest domains: with three or more it can miss the true
		// minimum and let a later pod skew the spread. PreFilter again.
		c.refresh(ctx, pc)
	} else if pc.Status == nil {
		ni := c.snapshot.NodeInfo(nodeName)
		if st := c.fw.RunPreFilterExtensionAddPod(ctx, pc.state, pc.Pod, info, ni); !st.IsSuccess() {
			return Placed{}, fmt.Errorf("update scheduling state after placing %s/%s on %s: %w", info.Pod.Namespace, info.Pod.Name, nodeName, st.AsError())
		}
	}
	return Placed{Info: info, Node: nodeName}, nil
}

// hardSpread tells whether the pod has a topology spread constraint the
// Filter enforces (DoNotSchedule).
func hardSpread(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	return false
}
