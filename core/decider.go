package core

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/factorylisters"
)

// Decider is one iteration of the node loop without its timing: it
// observes (the informers' caches, the cloud), decides (the pure decision
// packages), has its actuator act, applies what happened, and returns the
// iteration's conclusions as one value. The node loop calls it at each
// scan; tidal explain and simulate call it once, with the dry-run
// actuator.
type Decider struct {
	opts     Options
	clock    clock.WithTicker
	metrics  *Metrics
	cloud    cloudprovider.CloudProvider
	nodes    corelisters.NodeLister
	live     *liveSnapshot
	observer *observer
	checker  *simulator.Checker
	keys     *simulator.EquivalenceKeys
	chain    *expander.Chain
	state    *clusterstate.Tracker
	events   *telemetry.Events
	prio     *priorityConfig
	sched    *schedules
	ahead    *expectations
	waiters  *waiters
	// nominatedTo are the nodes tidal's nominations name.
	nominatedTo nominatedNodes
	// nominating orders the iteration's nomination writes and those of
	// restoreNomination, which runs outside the iteration.
	nominating sync.Mutex
	actuator   act.Actuator
	// scaleIn is the last scale-in view; launchErrors when the cloud told
	// of failed launches.
	scaleIn      *scaleIns
	launchErrors *launchErrors
	// interrupts are the cloud's word of instances going away.
	interrupts *interruptions
	// mem is what the decisions carry from one iteration to the next.
	mem memory
	// wake is when the loop should decide again sooner than its scan.
	wake wake
	// lifetime is how long removals in the background may run.
	lifetime context.Context
	// configMaps are the priority expander's and the schedules'
	// ConfigMaps (read once the loop starts them); status is the status
	// ConfigMap, on which the actuator records events.
	configMaps *configMapSource
	status     *statusWriter
	// handlers are the informer event handlers that feed the snapshot.
	handlers []cache.ResourceEventHandlerRegistration
}

// wake is what an iteration concluded about when to decide again.
type wake struct {
	// scaleDownDue is when an unneeded node will be due for removal
	// (zero: none).
	scaleDownDue time.Time
	// recheck, when set, is how soon to decide again for pending pods the
	// last decision placed on ready nodes (see nextRecheck).
	recheck time.Duration
}

// NewDecider builds the decider and registers its informer handlers on
// cfg.Factory, which the caller starts; removals it starts end with ctx.
// With Options.DryRun its actuator is the dry-run one, from which no write
// leaves.
func NewDecider(ctx context.Context, cfg Config) (*Decider, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	chain, err := expander.ParseChain(cfg.Options.Expander)
	if err != nil {
		return nil, err
	}
	opts := cfg.Options
	// GPU nodes are ready once their GPUs are, by the provider's label.
	if cfg.Cloud != nil {
		opts.Taints.GPULabel = cfg.Cloud.GPULabel()
	}
	f := cfg.Factory
	pods, nodes := f.Core().V1().Pods(), f.Core().V1().Nodes()
	d := &Decider{opts: opts, clock: cfg.Clock, metrics: cfg.Metrics, cloud: cfg.Cloud, nodes: nodes.Lister(), chain: chain,
		live: newLiveSnapshot(), keys: simulator.NewEquivalenceKeys(), state: clusterstate.New(opts.ClusterState),
		events: newEventDeduper(cfg.Recorder, cfg.Clock, opts.RecordDuplicatedEvents), ahead: newExpectations(), waiters: newWaiters(),
		scaleIn: &scaleIns{pods: pods.Lister()}, launchErrors: &launchErrors{clock: cfg.Clock}, interrupts: newInterruptions(cfg.Cloud), lifetime: ctx,
		mem: memory{rnd: rand.New(rand.NewPCG(uint64(cfg.Clock.Now().UnixNano()), 0x7469646c))}}
	d.observer = &observer{cloud: cfg.Cloud, clock: cfg.Clock, metrics: cfg.Metrics, opts: opts, live: d.live,
		ahead: d.ahead, events: d.events, templates: map[string]groupTemplateState{},
		pods: pods.Lister(), daemonSets: f.Apps().V1().DaemonSets().Lister(),
		deployments: f.Apps().V1().Deployments().Lister(), statefulSets: f.Apps().V1().StatefulSets().Lister(),
		replicaSets: f.Apps().V1().ReplicaSets().Lister(), rcs: f.Core().V1().ReplicationControllers().Lister(),
		jobs: f.Batch().V1().Jobs().Lister(), pdbs: f.Policy().V1().PodDisruptionBudgets().Lister()}
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
		what     string
	}{
		{pods.Informer(), d.live.podHandler(), "pod"},
		{nodes.Informer(), d.live.nodeHandler(), "node"},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, fmt.Errorf("%s informer: %w", h.what, err)
		}
		d.handlers = append(d.handlers, reg)
	}
	d.configMaps = newConfigMapSource(cfg.Client, opts.Namespace, expander.PriorityConfigMapName, expander.CAPriorityConfigMapName,
		nodeschedule.ConfigMapName)
	d.sched = &schedules{source: d.configMaps}
	d.prio = newPriorityConfig(d.configMaps, d.events)
	d.status = newStatusWriter(cfg.Client, opts, cfg.Clock)
	d.actuator = newActuator(cfg, opts, d, pods.Informer().HasSynced)
	listers, err := factorylisters.New(f)
	if err != nil {
		return nil, err
	}
	if d.checker, err = simulator.NewChecker(ctx, d.live.snap, listers); err != nil {
		return nil, err
	}
	return d, nil
}

// HasSynced reports whether the decider's event handlers have received
// every object of the informers' first List: before, an iteration would
// decide on part of the cluster.
func (d *Decider) HasSynced() bool {
	for _, h := range d.handlers {
		if !h.HasSynced() {
			return false
		}
	}
	return true
}

// Decide is one iteration: observe, decide, act, and the iteration's
// conclusions. It returns nil only when nothing could be observed; with an
// error after that, the iteration says what was concluded up to it.
func (d *Decider) Decide(ctx context.Context) (it *Iteration, err error) {
	obs, err := d.observer.observe(ctx)
	if err != nil {
		return nil, err
	}
	// Taints failed removals could not take off come off first, whatever
	// else this iteration does.
	d.actuator.Begin(ctx)
	// Nodes the cloud takes away are marked first, whatever else this
	// iteration does; it decides without them and with their pods
	// pictured as pending.
	marks := d.interrupt(ctx, obs)
	gone := slices.Sorted(maps.Keys(marks))
	// Nodes past their lifetime or drifted are left out too, their pods
	// pictured, so the capacity for them is asked for; they are replaced
	// once it is Ready (renew, after scale-up).
	expired := d.expiries(obs, gone)
	for _, r := range expired {
		gone = append(gone, r.Node)
	}
	if len(gone) > 0 {
		snap := d.checker.Snapshot()
		snap.Fork()
		defer snap.Revert()
		obs.pending = append(obs.pending, d.withoutGone(ctx, gone)...)
	}
	report := &Iteration{limits: limitsOf(d.opts)}
	// renewed are the nodes past their lifetime or drifted marked in this
	// iteration.
	var renewed map[string]bool
	health := d.updateClusterState(ctx, obs, report)
	// Pods nominated to nodes that cannot take them and are not coming
	// wait for a node like the other pending pods, from this decision on.
	obs.pending = append(obs.pending, d.stranded(obs, d.nominationTargets(obs))...)
	report.health = health
	d.readSchedules(ctx, obs, report)
	defer func() {
		report.observed = observedOf(obs)
		report.groups = map[string]clusterstate.GroupView{}
		for _, g := range d.state.Groups() {
			report.groups[g.ID] = g
		}
		report.removing = d.actuator.Removing().Nodes
		report.replacing = replacingOf(obs.groupOfNode, marks, expired, renewed)
		report.unneededSince = d.mem.unneeded
		d.actuator.End(err == nil, obs.targets())
		it = report
	}()
	if !health.Healthy {
		klog.FromContext(ctx).Info("Cluster is unhealthy, not scaling", "reason", health.Reason)
		d.removeUnusedNew(ctx, obs, report, "the cluster is unhealthy")
		return report, nil
	}
	d.enforceSchedules(ctx, obs, report)
	err = d.scaleUp(ctx, obs, report)
	d.nominate(ctx, obs, report.plan)
	d.waiters.update(obs.pending, report.plan, d.coming)
	d.wake.recheck = nextRecheck(report.plan, d.wake.recheck, d.opts.ScanInterval)
	if err != nil {
		d.removeUnusedNew(ctx, obs, report, "the scale-up decision failed")
		return report, err
	}
	d.removeUnusedNew(ctx, obs, report, "")
	d.replacementReady(obs, report.plan, marks)
	renewed = d.renew(ctx, obs, report.plan, expired)
	return report, d.scaleDown(ctx, obs, report)
}

// coming reports whether a node group has requested nodes not yet ready.
func (d *Decider) coming(group string) bool { return d.state.Group(group).Upcoming > 0 }
