package app

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/config"
)

var provReq = []config.UnsupportedFeature{{Flag: "enable-provisioning-requests", Value: "true",
	Feature: "ProvisioningRequests", Note: "tidal does not handle ProvisioningRequests"}}

// The event goes on the status ConfigMap when it exists (so that kubectl
// describe shows it), and by reference to it when it does not yet.
func TestUnsupportedFeatureEvent(t *testing.T) {
	opts := config.NewOptions()
	for _, exists := range []bool{true, false} {
		client := fake.NewClientset()
		if exists {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: opts.ScaleUp.StatusConfigMapName, Namespace: opts.Namespace, UID: "0f1e"}}
			if _, err := client.CoreV1().ConfigMaps(opts.Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		rec := record.NewFakeRecorder(10)
		rec.IncludeObject = true
		eventUnsupported(context.Background(), client, rec, opts, provReq)
		if len(rec.Events) != 1 {
			t.Fatalf("status ConfigMap exists=%v: %d events, want 1", exists, len(rec.Events))
		}
		ev := <-rec.Events
		for _, want := range []string{"Warning FeatureNotImplemented --enable-provisioning-requests=true asks for ProvisioningRequests",
			"involvedObject{kind=ConfigMap,apiVersion=v1}"} {
			if !strings.Contains(ev, want) {
				t.Errorf("status ConfigMap exists=%v: event %q lacks %q", exists, ev, want)
			}
		}
	}
	rec := record.NewFakeRecorder(10)
	eventUnsupported(context.Background(), fake.NewClientset(), rec, opts, nil)
	if len(rec.Events) != 0 {
		t.Errorf("events without a feature asked for: %d", len(rec.Events))
	}
}

// The log line has klog's Warning severity.
func TestUnsupportedFeatureLogIsAWarning(t *testing.T) {
	var buf bytes.Buffer
	// Other tests of the package route klog through a logr sink, which
	// has no severities; klog's own output is what tidal writes by default.
	klog.ClearLogger()
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	klog.SetOutput(&buf)
	defer func() { _ = fs.Set("logtostderr", "true"); klog.SetOutput(nil) }()
	warnings := klog.Stats.Warning.Lines()
	logUnsupported(provReq)
	klog.Flush()
	if n := klog.Stats.Warning.Lines() - warnings; n != 1 {
		t.Errorf("%d Warning lines, want 1", n)
	}
	if got := buf.String(); !strings.Contains(got, "--enable-provisioning-requests=true asks for ProvisioningRequests, which tidal does not implement") {
		t.Errorf("log: %q, want one Warning line naming the flag and the feature", got)
	}
}

// The info line of accepted flags leaves out the ones warned about.
func TestWithoutUnsupported(t *testing.T) {
	got := withoutUnsupported([]string{"enable-provisioning-requests=true", "regional=true"}, provReq)
	if strings.Join(got, ",") != "regional=true" {
		t.Errorf("got %v", got)
	}
}
