package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
)

// A term that ends while its cloud starts (a replica stopped right after it
// took the lease) ends without an error: the cloud's error is the
// cancellation's. The same error while the term runs is a failure.
func TestATermEndedWhileItsCloudStartsIsNoFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cancel  bool
		wantErr string
	}{
		{name: "term ended", cancel: true},
		{name: "term running", wantErr: "start local cloud"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			client := fake.NewClientset()
			client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				if tc.cancel {
					cancel()
					return true, nil, context.Canceled
				}
				return true, nil, errors.New("connection refused")
			})
			opts := config.NewOptions()
			opts.CloudProvider = config.CloudProviderLocal
			reg := prometheus.NewRegistry()
			env := &loopEnv{opts: opts, restConfig: &rest.Config{Host: "http://127.0.0.1:1"}, client: client, registry: reg,
				health: newHealth(opts.MaxInactivity, opts.MaxFailingTime), nodeMetrics: core.NewMetrics(reg, false),
				podMetrics: newPodLoopMetrics(reg), seams: seams{localCloudClient: client}}
			err := runLoops(ctx, env)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("runLoops returned %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("runLoops returned %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}
