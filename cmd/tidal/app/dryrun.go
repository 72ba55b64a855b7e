package app

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/config"
)

// DryRunComponentName is the event source of tidal in shadow mode.
const DryRunComponentName = "tidal-dry-run"

// dryRunGuard is shadow mode's second line of defence, under the loops'
// own: a transport that lets through reads and the few writes a shadow
// makes (events; its own Lease and status ConfigMap in --namespace) and
// refuses every other write before it leaves the process.
type dryRunGuard struct {
	namespace, lease, status string
	refused                  *prometheus.CounterVec
	logOnce                  sync.Map
}

func newDryRunGuard(opts *config.Options, reg prometheus.Registerer) *dryRunGuard {
	g := &dryRunGuard{namespace: opts.Namespace, lease: opts.LeaseName, status: opts.ScaleUp.StatusConfigMapName,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidal_dry_run_refused_writes_total",
			Help: "With --dry-run: API writes and cloud calls refused before they left tidal, by target; any is a bug (see the log).",
		}, []string{"target"})}
	reg.MustRegister(g.refused)
	return g
}

// wrap is the transport middleware (rest.Config.Wrap).
func (g *dryRunGuard) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if err := g.allow(r); err != nil {
			g.count(r.Method+" "+resourceOf(r.URL.Path), err)
			return nil, err
		}
		return next.RoundTrip(r)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cloudRefused is told of the cloud calls cloudprovider.DryRun refused.
func (g *dryRunGuard) cloudRefused(method, group string) {
	g.count("cloud "+method, fmt.Errorf("dry run: refused %s of node group %s", method, group))
}

func (g *dryRunGuard) count(target string, err error) {
	g.refused.WithLabelValues(target).Inc()
	if _, seen := g.logOnce.LoadOrStore(target, true); !seen {
		klog.Background().Error(err, "Dry run refused a write: this is a bug, tidal in dry-run must not try to act", "target", target)
	}
}

// allow reports why r may not go out, nil when it may.
func (g *dryRunGuard) allow(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	ns, resource, name := splitPath(r.URL.Path)
	switch {
	case resource == "events":
		return nil
	case ns == g.namespace && resource == "leases" && g.ownName(r, name, g.lease):
		return nil
	case ns == g.namespace && resource == "configmaps" && g.ownName(r, name, g.status):
		return nil
	}
	return fmt.Errorf("dry run: refused %s %s", r.Method, r.URL.Path)
}

// ownName reports whether the request is about the object named want: by
// its path, or for a create (no name in the path) by the body's name.
func (g *dryRunGuard) ownName(r *http.Request, name, want string) bool {
	if name != "" {
		return name == want && r.Method != http.MethodDelete
	}
	if r.Method != http.MethodPost || r.GetBody == nil {
		return false
	}
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return false
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(bytes.TrimSpace(data), nil, nil)
	if err != nil {
		return false
	}
	m, err := meta.Accessor(obj)
	return err == nil && m.GetName() == want
}

// splitPath reads namespace, resource and name (with a subresource after
// the name ignored) from an API path: /api/v1/namespaces/NS/RES/NAME or
// /apis/GROUP/VERSION/namespaces/NS/RES/NAME, and cluster-scoped forms.
func splitPath(path string) (ns, resource, name string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", "", ""
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		ns, parts = parts[1], parts[2:]
	}
	if len(parts) >= 1 {
		resource = parts[0]
	}
	if len(parts) >= 2 {
		name = parts[1]
	}
	if len(parts) >= 3 {
		// A subresource (status, eviction, scale) is a write of its own kind.
		resource += "/" + parts[2]
	}
	return ns, resource, name
}

// resourceOf is the metric label of a path: its resource, without names.
func resourceOf(path string) string {
	_, resource, _ := splitPath(path)
	if resource == "" {
		return "other"
	}
	return resource
}

// dryRunRecorder records every event with its reason prefixed by DryRun:
// ScaledUpGroup becomes DryRunScaledUpGroup, so that a shadow's events
// never pass for the acting autoscaler's.
type dryRunRecorder struct{ next record.EventRecorder }

var _ record.EventRecorder = dryRunRecorder{}

func (r dryRunRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	r.next.Event(obj, eventType, dryRunReason(reason), message)
}

func (r dryRunRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.next.Eventf(obj, eventType, dryRunReason(reason), format, args...)
}

func (r dryRunRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventType, reason, format string, args ...any) {
	r.next.AnnotatedEventf(obj, annotations, eventType, dryRunReason(reason), format, args...)
}

// dryRunReason is reason with the DryRun prefix, once.
func dryRunReason(reason string) string {
	if strings.HasPrefix(reason, "DryRun") {
		return reason
	}
	return "DryRun" + reason
}

// dryRunCloud wraps the provider so that no call changes the cloud.
func (g *dryRunGuard) cloud(p cloudprovider.CloudProvider) cloudprovider.CloudProvider {
	return cloudprovider.DryRun(p, g.cloudRefused)
}
