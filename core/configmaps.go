package core

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/tidal-autoscaler/tidal/expander"
)

// configMapSource watches the ConfigMaps of tidal's namespace (priority
// expander configuration), separately from the cluster-wide informers.
type configMapSource struct {
	factory informers.SharedInformerFactory
	lister  corelisters.ConfigMapLister
	ns      string
	synced  bool
}

func newConfigMapSource(client kubernetes.Interface, namespace string) *configMapSource {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	return &configMapSource{factory: f, lister: f.Core().V1().ConfigMaps().Lister(), ns: namespace}
}

func (s *configMapSource) start(ctx context.Context) error {
	s.factory.Start(ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v in namespace %s did not sync", typ, s.ns)
		}
	}
	s.synced = true
	go func() { <-ctx.Done(); s.factory.Shutdown() }()
	return nil
}

func (s *configMapSource) get(name string) *corev1.ConfigMap {
	if !s.synced {
		return nil
	}
	cm, err := s.lister.ConfigMaps(s.ns).Get(name)
	if err != nil {
		return nil
	}
	return cm
}

// priorityConfig is the priority expander's configuration, parsed again
// whenever its ConfigMap changes. A broken one gives a warning event on the
// ConfigMap and no configuration: the priority strategy then keeps every
// option and the next strategy of the chain decides.
type priorityConfig struct {
	source  *configMapSource
	events  *eventDeduper
	version string
	parsed  *expander.Priorities
}

func newPriorityConfig(s *configMapSource, e *eventDeduper) *priorityConfig {
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
		p.events.onConfigMap(cm, corev1.EventTypeWarning, "PriorityConfigMapInvalid",
			"ConfigMap %s/%s has no %q key; the priority expander is skipped", cm.Namespace, cm.Name, expander.PriorityConfigMapKey)
		return nil
	}
	parsed, err := expander.ParsePriorities(value)
	if err != nil {
		p.events.onConfigMap(cm, corev1.EventTypeWarning, "PriorityConfigMapInvalid",
			"ConfigMap %s/%s key %q: %v; the priority expander is skipped", cm.Namespace, cm.Name, expander.PriorityConfigMapKey, err)
		return nil
	}
	p.parsed = parsed
	return parsed
}
