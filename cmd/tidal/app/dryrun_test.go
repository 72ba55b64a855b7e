package app

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/tidal-autoscaler/tidal/config"
)

// TestDryRunGuardLetsOnlyAShadowsWritesOut drives a real client through
// the guard: reads, events, its own Lease and status ConfigMap go out;
// every other write (a taint, an eviction, a scale, another ConfigMap,
// the Lease of the autoscaler it runs beside) is refused before the
// network and counted.
func TestDryRunGuardLetsOnlyAShadowsWritesOut(t *testing.T) {
	opts := config.NewOptions()
	opts.CloudProvider, opts.DryRun = config.CloudProviderLocal, true
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	g := newDryRunGuard(opts, reg)
	var sent []string
	cfg := &rest.Config{Host: "http://api.invalid", ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}}
	cfg.Wrap(func(http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			sent = append(sent, r.Method+" "+r.URL.Path)
			return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
		})
	})
	cfg.Wrap(g.wrap)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx, ns := context.Background(), opts.Namespace
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	allowed := map[string]func() error{
		"get node": func() error { _, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); return err },
		"create event": func() error {
			_, err := client.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
			return err
		},
		"create own lease": func() error {
			_, err := client.CoordinationV1().Leases(ns).Create(ctx, lease("tidal-dry-run"), metav1.CreateOptions{})
			return err
		},
		"update own lease": func() error {
			_, err := client.CoordinationV1().Leases(ns).Update(ctx, lease("tidal-dry-run"), metav1.UpdateOptions{})
			return err
		},
		"create own status": func() error {
			_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm("tidal-dry-run-status"), metav1.CreateOptions{})
			return err
		},
		"update own status": func() error {
			_, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm("tidal-dry-run-status"), metav1.UpdateOptions{})
			return err
		},
	}
	refused := map[string]func() error{
		"taint a node": func() error {
			_, err := client.CoreV1().Nodes().Update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.UpdateOptions{})
			return err
		},
		"delete a node": func() error { return client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}) },
		"evict a pod": func() error {
			return client.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}})
		},
		"take the real lease": func() error {
			_, err := client.CoordinationV1().Leases(ns).Create(ctx, lease("tidal"), metav1.CreateOptions{})
			return err
		},
		"take CA's lease": func() error {
			_, err := client.CoordinationV1().Leases(ns).Update(ctx, lease("cluster-autoscaler"), metav1.UpdateOptions{})
			return err
		},
		"write the real status": func() error {
			_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm("tidal-status"), metav1.CreateOptions{})
			return err
		},
		"own status elsewhere": func() error {
			_, err := client.CoreV1().ConfigMaps("default").Update(ctx, cm("tidal-dry-run-status"), metav1.UpdateOptions{})
			return err
		},
		"delete own status": func() error {
			return client.CoreV1().ConfigMaps(ns).Delete(ctx, "tidal-dry-run-status", metav1.DeleteOptions{})
		},
	}
	for name, call := range allowed {
		sent = nil
		if _ = call(); len(sent) != 1 {
			t.Errorf("%s: %d requests went out, want 1", name, len(sent))
		}
	}
	for name, call := range refused {
		sent = nil
		err := call()
		if len(sent) != 0 || err == nil || !strings.Contains(err.Error(), "dry run: refused") {
			t.Errorf("%s: went out %v, err %v; want refused before the network", name, sent, err)
		}
	}
	if n := testutil.CollectAndCount(g.refused); n == 0 {
		t.Error("refusals were not counted in tidal_dry_run_refused_writes_total")
	}
}

// TestDryRunRecorderPrefixesEveryReason: the shadow's events never pass
// for the acting autoscaler's.
func TestDryRunRecorderPrefixesEveryReason(t *testing.T) {
	fake := record.NewFakeRecorder(10)
	r := dryRunRecorder{next: fake}
	pod := &corev1.Pod{}
	r.Event(pod, corev1.EventTypeNormal, "TriggeredScaleUp", "m")
	r.Eventf(pod, corev1.EventTypeNormal, "ScaleDown", "%s", "m")
	r.AnnotatedEventf(pod, nil, corev1.EventTypeNormal, "DryRunScaledUpGroup", "m")
	var got bytes.Buffer
	for range 3 {
		got.WriteString(<-fake.Events + "\n")
	}
	want := "Normal DryRunTriggeredScaleUp m\nNormal DryRunScaleDown m\nNormal DryRunScaledUpGroup m\n"
	if got.String() != want {
		t.Errorf("events:\n%s\nwant:\n%s", got.String(), want)
	}
}
