package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PodLister lists the pods of a namespace that a selector matches.
type PodLister interface {
	List(namespace string, selector labels.Selector) ([]*corev1.Pod, error)
}

// ListerPods adapts a client-go pod lister (a scan of the namespace).
type ListerPods struct{ Lister corelisters.PodLister }

// List implements PodLister.
func (l ListerPods) List(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	return l.Lister.Pods(namespace).List(selector)
}

// podLabelIndex files pods under "namespace/key=value" for each label.
const podLabelIndex = "tidal.dev/namespace-label"

// IndexedPods lists pods through a label index on the pod informer: a
// selector with an equality requirement (app=web) looks only at the pods
// carrying that label, not at every pod of the namespace.
type IndexedPods struct{ indexer cache.Indexer }

// NewIndexedPods adds the label index to a pod informer; call it before
// the informer starts.
func NewIndexedPods(inf cache.SharedIndexInformer) (*IndexedPods, error) {
	if _, ok := inf.GetIndexer().GetIndexers()[podLabelIndex]; !ok {
		if err := inf.AddIndexers(cache.Indexers{podLabelIndex: podLabelKeys}); err != nil {
			return nil, fmt.Errorf("pod label index: %w", err)
		}
	}
	return &IndexedPods{indexer: inf.GetIndexer()}, nil
}

func podLabelKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(pod.Labels))
	for k, v := range pod.Labels {
		keys = append(keys, pod.Namespace+"/"+k+"="+v)
	}
	return keys, nil
}

// List implements PodLister.
func (p *IndexedPods) List(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	index, value := cache.NamespaceIndex, namespace
	if pair, ok := equalityPair(selector); ok {
		index, value = podLabelIndex, namespace+"/"+pair.key+"="+pair.value
	}
	objs, err := p.indexer.ByIndex(index, value)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, o := range objs {
		if pod := o.(*corev1.Pod); selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	return out, nil
}
