// Package checkertest builds a snapshot and a scheduler-framework checker
// over it for the tests and benchmarks of the decision packages.
package checkertest

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/factorylisters"
)

// New is an empty snapshot and a checker over it; see Checker.
func New(tb testing.TB, client kubernetes.Interface) (*simulator.Snapshot, *simulator.Checker) {
	tb.Helper()
	snap := simulator.NewSnapshot()
	return snap, Checker(tb, snap, client)
}

// Checker is the scheduler framework over snap. With a nil client the
// plugins see no objects besides the snapshot's (no volumes, namespaces or
// storage classes); otherwise they read client's objects through a started
// informer factory, stopped when the test ends, whose changes move the
// checker's ListerVersion.
func Checker(tb testing.TB, snap *simulator.Snapshot, client kubernetes.Interface) *simulator.Checker {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var listers simulator.Listers
	var factory informers.SharedInformerFactory
	if client != nil {
		factory = informers.NewSharedInformerFactory(client, 0)
		l, err := factorylisters.New(factory)
		if err != nil {
			cancel()
			tb.Fatal(err)
		}
		listers = l
	}
	checker, err := simulator.NewChecker(ctx, snap, listers)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	if factory != nil {
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
	}
	tb.Cleanup(func() {
		cancel()
		if factory != nil {
			factory.Shutdown()
		}
	})
	return checker
}
