package controller

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// selectorIndex remembers the pod selector each autoscaler last synced
// with, so that a sync can tell whether another autoscaler of the namespace
// selects one of its pods too (Kubernetes then refuses to scale:
// AmbiguousSelector).
//
// A selector with an equality requirement (app=web) is filed under that
// label pair: a pod can only match selectors filed under one of its own
// labels, so a check costs a few map lookups per pod instead of a match
// against every selector of the namespace.
type selectorIndex struct {
	mu    sync.RWMutex
	byKey map[string]indexedSelector
	// byPair files selectors by namespace and one equality requirement;
	// noPair holds the selectors without one.
	byPair map[string]map[labelPair]map[string]struct{}
	noPair map[string]map[string]struct{}
}

type labelPair struct{ key, value string }

type indexedSelector struct {
	namespace string
	selector  labels.Selector
	pair      labelPair
	paired    bool
}

func newSelectorIndex() *selectorIndex {
	return &selectorIndex{
		byKey:  map[string]indexedSelector{},
		byPair: map[string]map[labelPair]map[string]struct{}{},
		noPair: map[string]map[string]struct{}{},
	}
}

// set records an autoscaler's selector.
func (x *selectorIndex) set(key, namespace string, sel labels.Selector) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.byKey[key]; ok {
		if old.namespace == namespace && old.selector.String() == sel.String() {
			return
		}
		x.unfile(key, old)
	}
	e := indexedSelector{namespace: namespace, selector: sel}
	e.pair, e.paired = equalityPair(sel)
	x.byKey[key] = e
	if e.paired {
		pairs := x.byPair[namespace]
		if pairs == nil {
			pairs = map[labelPair]map[string]struct{}{}
			x.byPair[namespace] = pairs
		}
		addKey(pairs, e.pair, key)
	} else {
		addKey(x.noPair, namespace, key)
	}
}

// remove forgets an autoscaler.
func (x *selectorIndex) remove(key string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.byKey[key]; ok {
		x.unfile(key, old)
	}
}

func (x *selectorIndex) unfile(key string, e indexedSelector) {
	delete(x.byKey, key)
	if e.paired {
		if pairs := x.byPair[e.namespace]; pairs != nil {
			removeKey(pairs, e.pair, key)
			if len(pairs) == 0 {
				delete(x.byPair, e.namespace)
			}
		}
		return
	}
	removeKey(x.noPair, e.namespace, key)
}

// others returns, sorted, the autoscalers of the namespace other than key
// whose selectors match at least one of the pods.
func (x *selectorIndex) others(key, namespace string, pods []*corev1.Pod) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var found []string
	check := func(other string, set labels.Set) {
		if other == key || slices.Contains(found, other) {
			return
		}
		if x.byKey[other].selector.Matches(set) {
			found = append(found, other)
		}
	}
	pairs, unpaired := x.byPair[namespace], x.noPair[namespace]
	for _, p := range pods {
		set := labels.Set(p.Labels)
		for k, v := range p.Labels {
			for other := range pairs[labelPair{k, v}] {
				check(other, set)
			}
		}
		for other := range unpaired {
			check(other, set)
		}
	}
	slices.Sort(found)
	return found
}

// equalityPair returns a label pair every object the selector matches must
// carry, if the selector has one.
func equalityPair(sel labels.Selector) (labelPair, bool) {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if vals := r.Values(); vals.Len() == 1 {
				return labelPair{r.Key(), vals.UnsortedList()[0]}, true
			}
		}
	}
	return labelPair{}, false
}

func addKey[K comparable](m map[K]map[string]struct{}, k K, key string) {
	s := m[k]
	if s == nil {
		s = map[string]struct{}{}
		m[k] = s
	}
	s[key] = struct{}{}
}

func removeKey[K comparable](m map[K]map[string]struct{}, k K, key string) {
	if s := m[k]; s != nil {
		delete(s, key)
		if len(s) == 0 {
			delete(m, k)
		}
	}
}
