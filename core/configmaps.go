package core

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tidal-autoscaler/tidal/core/telemetry"
	"github.com/tidal-autoscaler/tidal/expander"
)

// configMapSource watches the named ConfigMaps of tidal's namespace
// (priority expander configuration), each through an informer restricted
// to its name, so that tidal lists and watches only its own ConfigMaps (its
// Role names them) and never reads the others of the namespace, such as
// EKS's aws-auth.
type configMapSource struct {
	ns        string
	informers map[string]cache.SharedIndexInformer
	synced    atomic.Bool
	// running counts the informers' goroutines, for wait.
	running sync.WaitGroup
}

func newConfigMapSource(client kubernetes.Interface, namespace string, names ...string) *configMapSource {
	s := &configMapSource{ns: namespace, informers: map[string]cache.SharedIndexInformer{}}
	for _, name := range names {
		selector := fields.OneTermEqualSelector("metadata.name", name).String()
		s.informers[name] = coreinformers.NewFilteredConfigMapInformer(client, namespace, 0, cache.Indexers{},
			func(o *metav1.ListOptions) { o.FieldSelector = selector })
	}
	return s
}

// start runs the informers until ctx ends and waits for their first list.
func (s *configMapSource) start(ctx context.Context) error {
	synced := make([]cache.InformerSynced, 0, len(s.informers))
	for _, inf := range s.informers {
		s.running.Go(func() { inf.Run(ctx.Done()) })
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("ConfigMap informers in namespace %s did not sync", s.ns)
	}
	s.synced.Store(true)
	return nil
}

// wait returns once the informers started by start have stopped (after
// its ctx ended).
func (s *configMapSource) wait() { s.running.Wait() }

// get returns the named ConfigMap, nil when it does not exist or is not
// watched, or before the informers synced.
func (s *configMapSource) get(name string) *corev1.ConfigMap {
	inf, ok := s.informers[name]
	if !ok || !s.synced.Load() {
		return nil
	}
	obj, exists, err := inf.GetStore().GetByKey(s.ns + "/" + name)
	if err != nil || !exists {
		return nil
	}
	cm, _ := obj.(*corev1.ConfigMap)
	return cm
}

// priorityConfig is the priority expander's configuration, parsed again
// whenever its ConfigMap changes. A broken one gives a warning event on the
// ConfigMap and no configuration: the priority strategy then keeps every
// option and the next strategy of the chain decides.
type priorityConfig struct {
	source  *configMapSource
	events  *telemetry.Events
	version string
	parsed  *expander.Priorities
}

func newPriorityConfig(s *configMapSource, e *telemetry.Events) *priorityConfig {
	return &priorityConfig{source: s, events: e}
}

func (p *priorityConfig) current() *expander.Priorities {
	cm := p.source.get(expander.PriorityConfigMapName)
	if cm == nil {
		cm = p.source.get(expander.CAPriorityConfigMapName)
	}
	if cm == nil {
		p.version, p.parsed = "", nil
		return nil
	}
	version := string(cm.UID) + "/" + cm.ResourceVersion
	if version == p.version {
		return p.parsed
	}
	p.version, p.parsed = version, nil
	value, ok := cm.Data[expander.PriorityConfigMapKey]
	if !ok {
		p.events.OnConfigMap(cm, corev1.EventTypeWarning, "PriorityConfigMapInvalid",
			"ConfigMap %s/%s has no %q key; the priority expander is skipped", cm.Namespace, cm.Name, expander.PriorityConfigMapKey)
		return nil
	}
	parsed, err := expander.ParsePriorities(value)
	if err != nil {
		p.events.OnConfigMap(cm, corev1.EventTypeWarning, "PriorityConfigMapInvalid",
			"ConfigMap %s/%s key %q: %v; the priority expander is skipped", cm.Namespace, cm.Name, expander.PriorityConfigMapKey, err)
		return nil
	}
	p.parsed = parsed
	return parsed
}
