package testenv

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// follow lists with list, then feeds every later event of watchFn to f, from
// a watch that resumes where it stopped when the server closes it, until
// the test ends. It returns the list's resource version, after f has seen
// the listed objects as Added events.
func follow(t *testing.T, list func(context.Context, metav1.ListOptions) (string, []watch.Event, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), f func(watch.Event)) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rv, initial, err := list(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatalf("list: %v", err)
	}
	for _, ev := range initial {
		f(ev)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		cancel()
		t.Fatalf("watch from %s: %v", rv, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				t.Errorf("watch: %v", ev.Object)
				continue
			}
			f(ev)
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return rv
}

// revision reads an object's resource version as the etcd revision it is
// on the local cluster, so that events of different watches can be
// ordered.
func revision(obj metav1.Object) (uint64, error) {
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resource version %q of %s: %w", obj.GetResourceVersion(), obj.GetName(), err)
	}
	return rv, nil
}

// FollowPods follows the pods of ns (all namespaces: "") from the test's
// client, the existing ones first, until the test ends.
func FollowPods(t *testing.T, cs kubernetes.Interface, ns string, f func(watch.Event)) {
	t.Helper()
	pods := cs.CoreV1().Pods(ns)
	follow(t, func(ctx context.Context, o metav1.ListOptions) (string, []watch.Event, error) {
		list, err := pods.List(ctx, o)
		if err != nil {
			return "", nil, err
		}
		return list.ResourceVersion, added(list.Items), nil
	}, pods.Watch, f)
}

// added is a list's items as the Added events a watch would have sent.
func added[T any, PT interface {
	*T
	runtime.Object
}](items []T) []watch.Event {
	evs := make([]watch.Event, len(items))
	for i := range items {
		evs[i] = watch.Event{Type: watch.Added, Object: PT(&items[i])}
	}
	return evs
}
