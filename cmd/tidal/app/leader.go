package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/config"
)

// errLostLease is returned when another replica took the lease from us.
var errLostLease = errors.New("lost the leader lease")

// runAsLeader runs run while this replica holds the leader Lease. On
// shutdown (ctx ends) run is stopped first and the lease released only
// after run has returned, so no other replica acts while this one finishes
// its work. Losing the lease stops run and returns errLostLease.
func runAsLeader(ctx context.Context, client kubernetes.Interface, opts *config.Options, run func(context.Context) error) error {
	id, err := identity()
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metaFor(opts.Namespace, opts.LeaseName),
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	started := make(chan struct{})
	finished := make(chan struct{})
	var runErr error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaderCtx context.Context) {
				close(started)
				defer close(finished)
				defer leCancel()
				klog.FromContext(ctx).Info("Became leader", "lease", opts.Namespace+"/"+opts.LeaseName, "identity", id)
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				stop := context.AfterFunc(leaderCtx, cancel)
				defer stop()
				runErr = run(runCtx)
				if leaderCtx.Err() != nil && ctx.Err() == nil && runErr == nil {
					runErr = errLostLease
				}
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	stopWaiting := context.AfterFunc(ctx, func() {
		select {
		case <-started:
		default:
			leCancel()
		}
	})
	defer stopWaiting()
	elector.Run(leCtx)
	select {
	case <-started:
		<-finished
		return runErr
	default:
		return nil
	}
}

func identity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return host + "_" + string(uuid.NewUUID()), nil
}

func metaFor(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
