package explain

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/snapshot"
	"github.com/tidal-autoscaler/tidal/core"
)

// Source is what one decision runs over: a client, an informer factory on
// it (not started), and a cloud provider that changes nothing.
type Source struct {
	Client  kubernetes.Interface
	Factory informers.SharedInformerFactory
	Cloud   cloudprovider.CloudProvider
}

// NewFactory makes the informer factory of a client (the one tidal runs
// with).
type NewFactory func(kubernetes.Interface) informers.SharedInformerFactory

// FileSource is a source over a snapshot: a fake clientset holding its
// objects, and the snapshot cloud provider over its nodes.
func FileSource(s *Snapshot, cfg snapshot.Config, newFactory NewFactory) (Source, error) {
	cloud, err := snapshot.New(s.Nodes, cfg)
	if err != nil {
		return Source{}, err
	}
	// Added one by one: fake.NewClientset panics on an object its tracker
	// refuses.
	client := fake.NewClientset()
	for _, obj := range s.Objects {
		if err := client.Tracker().Add(obj); err != nil {
			return Source{}, fmt.Errorf("snapshot object %s: %w", objectName(obj), err)
		}
	}
	return Source{Client: client, Factory: newFactory(client), Cloud: cloud}, nil
}

// Options are the node loop's options for one decision that must not act:
// dry run, no status ConfigMap written, and no standing aside while
// Cluster Autoscaler runs (explaining beside it is the point).
func Options(o core.Options) core.Options {
	o.DryRun, o.WriteStatusConfigMap, o.KeepDecisions = true, false, true
	o.ClusterAutoscalerLeaseNamespace, o.ClusterAutoscalerLeaseName = "", ""
	return o
}

// Decide observes src and decides once, as one iteration of the node
// loop would, with the dry-run actuator; no loop runs. The cloud of src
// must refuse changes, and in a live cluster its client must refuse
// writes.
func Decide(ctx context.Context, src Source, opts core.Options) (*core.Decisions, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	decider, err := core.NewDecider(ctx, core.Config{Cloud: src.Cloud, Client: src.Client, Factory: src.Factory,
		Recorder: &record.FakeRecorder{}, Metrics: core.NewMetrics(prometheus.NewRegistry(), false), Options: Options(opts)})
	if err != nil {
		return nil, fmt.Errorf("node loop: %w", err)
	}
	src.Factory.Start(ctx.Done())
	defer func() {
		// The informers stop with ctx; Shutdown waits for them.
		cancel()
		src.Factory.Shutdown()
	}()
	for typ, ok := range src.Factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer for %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), decider.HasSynced) {
		return nil, errors.New("node loop's informer handlers did not sync")
	}
	it, err := decider.Decide(ctx)
	if err != nil {
		return nil, fmt.Errorf("node loop iteration: %w", err)
	}
	return core.DecisionsOf(it), nil
}

// objectName names an object of a snapshot in an error: kind namespace/name.
func objectName(obj runtime.Object) string {
	kind := fmt.Sprintf("%T", obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return kind
	}
	if m.GetNamespace() == "" {
		return kind + " " + m.GetName()
	}
	return kind + " " + m.GetNamespace() + "/" + m.GetName()
}
