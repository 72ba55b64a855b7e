package podloop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	custommetrics "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	externalmetrics "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	resourcemetrics "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// The pod loop's tests read metrics the way tidal does in a real cluster:
// through the API server, from aggregated APIs. hpaMetricsAPI is a small HTTPS
// server in the test process serving metrics.k8s.io/v1beta1,
// custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1; three
// APIServices point the local cluster's kube-apiserver at it through an
// ExternalName Service resolving to localhost (the aggregator resolves
// ExternalName services to their name and the APIService's port, so no
// cluster networking is involved).
//
// Values come from a per-namespace load: a total that the pods matched by
// a request's selector share evenly (cpu, Pods metrics), or a value
// (External metrics). A namespace can be marked down: every request for it
// then fails with 503, as a broken metrics pipeline would.

const hpaMetricsAPINamespace = "tidal-test-metrics-api"

// hpaMetricsLoad is one namespace's metric state.
type hpaMetricsLoad struct {
	cpuMilli int64            // total cpu usage shared by the selected pods
	pods     map[string]int64 // Pods metric name → total shared by the pods (milli)
	external map[string]int64 // External metric name → value (milli)
	down     bool
}

type hpaMetricsAPI struct {
	client kubernetes.Interface // of the cluster it serves
	mu     sync.Mutex
	loads  map[string]*hpaMetricsLoad
}

// hpaMetricsAPIs are the aggregated metrics APIs, one per cluster, started
// the first time a test on the cluster asks for one.
var hpaMetricsAPIs = testenv.Fixture[*hpaMetricsAPI]{Setup: hpaStartMetricsAPI}

// hpaUseMetricsAPI returns the aggregated metrics API of the test's
// cluster; the test's namespace state is removed when the test ends.
func hpaUseMetricsAPI(t *testing.T, ns string) *hpaMetricsAPI {
	t.Helper()
	api := hpaMetricsAPIs.Get(t, clusters)
	t.Cleanup(func() {
		api.mu.Lock()
		delete(api.loads, ns)
		api.mu.Unlock()
	})
	return api
}

func (m *hpaMetricsAPI) update(ns string, f func(*hpaMetricsLoad)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.loads[ns]
	if l == nil {
		l = &hpaMetricsLoad{pods: map[string]int64{}, external: map[string]int64{}}
		m.loads[ns] = l
	}
	f(l)
}

// setCPU sets the namespace's total cpu usage in milli-cores.
func (m *hpaMetricsAPI) setCPU(ns string, milli int64) {
	m.update(ns, func(l *hpaMetricsLoad) { l.cpuMilli = milli })
}

// setPodsMetric sets a Pods metric's total over the pods.
func (m *hpaMetricsAPI) setPodsMetric(ns, name string, total int64) {
	m.update(ns, func(l *hpaMetricsLoad) { l.pods[name] = total * 1000 })
}

// setExternal sets an External metric's value.
func (m *hpaMetricsAPI) setExternal(ns, name string, v int64) {
	m.update(ns, func(l *hpaMetricsLoad) { l.external[name] = v * 1000 })
}

// setDown makes every request for the namespace fail, or succeed again.
func (m *hpaMetricsAPI) setDown(ns string, down bool) {
	m.update(ns, func(l *hpaMetricsLoad) { l.down = down })
}

// hpaMetricsGroups are the groups the aggregated metrics API serves.
var hpaMetricsGroups = []struct{ group, version string }{
	{"metrics.k8s.io", "v1beta1"}, {"custom.metrics.k8s.io", "v1beta2"}, {"external.metrics.k8s.io", "v1beta1"},
}

func hpaStartMetricsAPI(c *localcluster.Cluster) (*hpaMetricsAPI, error) {
	m := &hpaMetricsAPI{client: c.Client, loads: map[string]*hpaMetricsLoad{}}
	srv := httptest.NewUnstartedServer(m)
	srv.StartTLS()
	port, err := strconv.Atoi(srv.URL[strings.LastIndex(srv.URL, ":")+1:])
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	_, err = c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hpaMetricsAPINamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	_, err = c.Client.CoreV1().Services(hpaMetricsAPINamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-api"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	agg, err := aggregator.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	for _, gv := range hpaMetricsGroups {
		_, err := agg.ApiregistrationV1().APIServices().Create(ctx, &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.version + "." + gv.group},
			Spec: apiregistrationv1.APIServiceSpec{
				Service:               &apiregistrationv1.ServiceReference{Namespace: hpaMetricsAPINamespace, Name: "metrics-api", Port: hpaInt32(int32(port))},
				Group:                 gv.group,
				Version:               gv.version,
				InsecureSkipTLSVerify: true,
				GroupPriorityMinimum:  100,
				VersionPriority:       100,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create APIService %s/%s: %w", gv.group, gv.version, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, gv := range hpaMetricsGroups {
		for {
			svc, err := agg.ApiregistrationV1().APIServices().Get(ctx, gv.version+"."+gv.group, metav1.GetOptions{})
			if err == nil && hpaAPIServiceAvailable(svc) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("APIService %s.%s not available: %+v (%v)", gv.version, gv.group, svc.Status, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// The namespace and the APIServices stay for the cluster's life.
	clusters.Keep(c, testenv.Object{Resource: "namespaces", Name: hpaMetricsAPINamespace})
	for _, gv := range hpaMetricsGroups {
		clusters.Keep(c, testenv.Object{Resource: "apiservices", Name: gv.version + "." + gv.group})
	}
	return m, nil
}

func hpaAPIServiceAvailable(svc *apiregistrationv1.APIService) bool {
	for _, c := range svc.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			return c.Status == apiregistrationv1.ConditionTrue
		}
	}
	return false
}

func hpaInt32(v int32) *int32 { return &v }

// ServeHTTP answers discovery and the three metrics APIs.
func (m *hpaMetricsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /apis/<group>/<version>[/namespaces/<ns>/...]
	if len(parts) < 3 || parts[0] != "apis" {
		hpaWriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	}
	group, version := parts[1], parts[2]
	if len(parts) == 3 {
		hpaWriteJSON(w, http.StatusOK, hpaDiscovery(group, version))
		return
	}
	if len(parts) < 6 || parts[3] != "namespaces" {
		hpaWriteStatus(w, http.StatusNotFound, "not found: "+r.URL.Path)
		return
	}
	ns, rest := parts[4], parts[5:]
	m.mu.Lock()
	var l hpaMetricsLoad
	if cur := m.loads[ns]; cur != nil {
		l = hpaMetricsLoad{cpuMilli: cur.cpuMilli, down: cur.down, pods: hpaCopyMap(cur.pods), external: hpaCopyMap(cur.external)}
	}
	m.mu.Unlock()
	if l.down {
		hpaWriteStatus(w, http.StatusServiceUnavailable, "the test's metrics pipeline is down")
		return
	}
	q := r.URL.Query()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	switch {
	case group == "metrics.k8s.io" && len(rest) == 1 && rest[0] == "pods":
		pods, err := hpaRunningPods(r.Context(), m.client, ns, q.Get("labelSelector"))
		if err != nil {
			hpaWriteStatus(w, http.StatusInternalServerError, err.Error())
			return
		}
		list := resourcemetrics.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: "metrics.k8s.io/v1beta1"}}
		for _, p := range pods {
			list.Items = append(list.Items, resourcemetrics.PodMetrics{
				ObjectMeta: metav1.ObjectMeta{Name: p, Namespace: ns},
				Timestamp:  now, Window: metav1.Duration{Duration: time.Second},
				Containers: []resourcemetrics.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(l.cpuMilli/int64(len(pods)), resource.DecimalSI),
					corev1.ResourceMemory: resource.MustParse("10Mi"),
				}}},
			})
		}
		hpaWriteJSON(w, http.StatusOK, list)
	case group == "custom.metrics.k8s.io" && len(rest) == 3 && rest[0] == "pods" && rest[1] == "*":
		total, ok := l.pods[rest[2]]
		pods, err := hpaRunningPods(r.Context(), m.client, ns, q.Get("labelSelector"))
		if !ok || err != nil {
			hpaWriteStatus(w, http.StatusNotFound, fmt.Sprintf("no metric %s (%v)", rest[2], err))
			return
		}
		list := custommetrics.MetricValueList{TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"}}
		for _, p := range pods {
			list.Items = append(list.Items, custommetrics.MetricValue{
				DescribedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p, APIVersion: "v1"},
				Metric:          custommetrics.MetricIdentifier{Name: rest[2]},
				Timestamp:       now, WindowSeconds: hpaInt64(1),
				Value: *resource.NewMilliQuantity(total/int64(len(pods)), resource.DecimalSI),
			})
		}
		hpaWriteJSON(w, http.StatusOK, list)
	case group == "external.metrics.k8s.io" && len(rest) == 1:
		v, ok := l.external[rest[0]]
		if !ok {
			hpaWriteStatus(w, http.StatusNotFound, "no external metric "+rest[0])
			return
		}
		hpaWriteJSON(w, http.StatusOK, externalmetrics.ExternalMetricValueList{
			TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: "external.metrics.k8s.io/v1beta1"},
			Items: []externalmetrics.ExternalMetricValue{{MetricName: rest[0], Timestamp: now,
				Value: *resource.NewMilliQuantity(v, resource.DecimalSI)}},
		})
	default:
		hpaWriteStatus(w, http.StatusNotFound, "not found: "+r.URL.Path)
	}
}

// discovery is a group version's resource list.
func hpaDiscovery(group, version string) metav1.APIResourceList {
	res := map[string][]metav1.APIResource{
		"metrics.k8s.io":          {{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}}},
		"custom.metrics.k8s.io":   {{Name: "pods/qps", Namespaced: true, Kind: "MetricValueList", Verbs: []string{"get"}}},
		"external.metrics.k8s.io": {{Name: "queue", Namespaced: true, Kind: "ExternalMetricValueList", Verbs: []string{"get"}}},
	}
	return metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: group + "/" + version, APIResources: res[group]}
}

// hpaRunningPods lists the names of the Running pods a selector matches.
func hpaRunningPods(ctx context.Context, cs kubernetes.Interface, ns, selector string) ([]string, error) {
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	return out, nil
}

func hpaWriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func hpaWriteStatus(w http.ResponseWriter, code int, msg string) {
	hpaWriteJSON(w, code, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Message: msg})
}

func hpaCopyMap(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func hpaInt64(v int64) *int64 { return &v }
