package app

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
)

// tidalFrames are the packages whose frames mark a goroutine as one a term
// started (directly, or as a closure it passed to an informer).
var tidalFrames = []string{"tidal/cmd/tidal/app.", "tidal/core.", "tidal/hpa/", "tidal/cloudprovider/"}

// termGoroutines returns the stacks of running goroutines with a frame of
// tidal's, other than this test's own.
func termGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "TestATermLeavesNoGoroutineBehind") {
			continue
		}
		for _, f := range tidalFrames {
			if strings.Contains(g, f) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// Each leadership term starts the PodAutoscaler informer, the custom metrics
// rediscovery and the ConfigMap informers; when the term's context ends,
// runLoops returns only after all of them have stopped, so two terms never
// overlap.
func TestATermLeavesNoGoroutineBehind(t *testing.T) {
	if leftover := termGoroutines(); len(leftover) > 0 {
		t.Fatalf("goroutines of tidal before the first term:\n%s", strings.Join(leftover, "\n\n"))
	}
	client := fake.NewClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: v1alpha1.SchemeGroupVersion.String(),
		APIResources: []metav1.APIResource{{Name: v1alpha1.Resource, Kind: v1alpha1.Kind, Namespaced: true}}}}
	opts := config.NewOptions()
	opts.CloudProvider = config.CloudProviderLocal
	opts.HPA = config.NewHPAOptions()
	reg := prometheus.NewRegistry()
	// Nothing listens at the configuration's address: the clients made from
	// it (PodAutoscalers, metrics APIs, events) fail and retry until the
	// term ends, as against an API server that is down.
	env := &loopEnv{opts: opts, restConfig: &rest.Config{Host: "http://127.0.0.1:1"}, client: client, registry: reg,
		health: newHealth(opts.MaxInactivity, opts.MaxFailingTime), nodeMetrics: core.NewMetrics(reg, false),
		podMetrics: newPodLoopMetrics(reg), seams: seams{localCloudClient: client}}
	for term := 1; term <= 2; term++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runLoops(ctx, env) }()
		// The term is up once the PodAutoscaler informer, the last part
		// runPodLoop starts, runs.
		for deadline := time.Now().Add(time.Minute); !running("app.runPodLoop", "sharedIndexInformer).Run"); {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("term %d: the PodAutoscaler informer did not start within a minute; goroutines:\n%s", term, strings.Join(termGoroutines(), "\n\n"))
			}
			runtime.Gosched()
			time.Sleep(10 * time.Millisecond)
		}
		for _, part := range [][]string{{"app.podLoopMetricSource"}, {"core.(*configMapSource).start", "sharedIndexInformer).Run"}} {
			if !running(part...) {
				t.Errorf("term %d: no goroutine of %v while the term runs", term, part)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("term %d: %v", term, err)
		}
		if leftover := termGoroutines(); len(leftover) > 0 {
			t.Fatalf("term %d ended, but %d goroutine(s) of it still run:\n%s", term, len(leftover), strings.Join(leftover, "\n\n"))
		}
	}
}

// running reports whether a goroutine's stack (its frames and its creator)
// names each of frames.
func running(frames ...string) bool {
	for _, g := range termGoroutines() {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}
