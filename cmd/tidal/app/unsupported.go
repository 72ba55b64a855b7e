package app

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/config"
)

// EventFeatureNotImplemented is the reason of the Warning event for a
// flag that asks for a Cluster Autoscaler feature tidal does not have.
const EventFeatureNotImplemented = "FeatureNotImplemented"

// WithUnsupportedFeatures makes Run warn, once, of the features the
// command line asks for that tidal does not implement: a Warning log line
// each at start, and a Warning event each on the status ConfigMap when the
// loops first start.
func WithUnsupportedFeatures(list []config.UnsupportedFeature) Option {
	return func(s *seams) { s.unsupported = list }
}

// logUnsupported writes the Warning lines.
func logUnsupported(list []config.UnsupportedFeature) {
	for _, u := range list {
		klog.Warningf("--%s=%s asks for %s, which tidal does not implement: %s (docs/ca-flags.md)", u.Flag, u.Value, u.Feature, u.Note)
	}
}

// eventUnsupported records the Warning events on the status ConfigMap, as
// the API server has it or, before it is first written, by name.
func eventUnsupported(ctx context.Context, client kubernetes.Interface, recorder record.EventRecorder, opts *config.Options, list []config.UnsupportedFeature) {
	if len(list) == 0 {
		return
	}
	var obj runtime.Object = &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: opts.Namespace, Name: opts.ScaleUp.StatusConfigMapName}
	getCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if cm, err := client.CoreV1().ConfigMaps(opts.Namespace).Get(getCtx, opts.ScaleUp.StatusConfigMapName, metav1.GetOptions{}); err == nil {
		obj = cm
	}
	for _, u := range list {
		recorder.Eventf(obj, corev1.EventTypeWarning, EventFeatureNotImplemented,
			"--%s=%s asks for %s, which tidal does not implement: %s", u.Flag, u.Value, u.Feature, u.Note)
	}
}
