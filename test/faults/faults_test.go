package faults

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// server answers every request with a Pod (a watch: an endless stream of
// nothing) and counts what reached it.
func server(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var served atomic.Int32
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	body, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), pod)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &served
}

func client(t *testing.T, srv *httptest.Server, tr *Transport) kubernetes.Interface {
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(tr.Wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Each kind reaches client-go as the error the API server's fault would
// cause, and is counted.
func TestTransportFaultsLookLikeTheServers(t *testing.T) {
	ctx := context.Background()
	get := func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		return err
	}
	update := func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Pods("ns").Update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}, metav1.UpdateOptions{})
		return err
	}
	watchErr := func(cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
		return err
	}
	isTimeout := func(err error) bool {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	tests := []struct {
		kind      Kind
		call      func(kubernetes.Interface) error
		want      func(error) bool
		reachesIt bool
	}{
		{InternalError, get, apierrors.IsInternalError, false},
		{Unavailable, get, apierrors.IsServiceUnavailable, false},
		{Conflict, update, apierrors.IsConflict, false},
		{ExpiredWatch, watchErr, apierrors.IsResourceExpired, false},
		{Timeout, get, isTimeout, false},
		{LostResponse, update, isTimeout, true},
	}
	for _, tt := range tests {
		srv, served := server(t)
		tr := New(1, Rule{Rate: 1, Kinds: []Kind{tt.kind}})
		tr.hold = 10 * time.Millisecond
		err := tt.call(client(t, srv, tr))
		if !tt.want(err) {
			t.Errorf("%s: client saw %v", tt.kind, err)
		}
		if got := served.Load() > 0; got != tt.reachesIt {
			t.Errorf("%s: the request reached the server: %v, want %v", tt.kind, got, tt.reachesIt)
		}
		if counts, requests := tr.Counts(); counts[tt.kind] != 1 || requests != 1 {
			t.Errorf("%s: counts %v after %d requests, want one fault of one request", tt.kind, counts, requests)
		}
	}
}

// A 429 carries Retry-After, so client-go waits and tries again, as it does
// with API priority and fairness.
func TestTransportTooManyRequestsIsRetriedByTheClient(t *testing.T) {
	srv, served := server(t)
	tr := New(7, Rule{Rate: 1, Kinds: []Kind{TooManyRequests}})
	cs := client(t, srv, tr)
	// The first request is faulted (drawn before it is observed); none after.
	tr.Observe(func(*http.Request, []byte) { tr.SetEnabled(false) })
	if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); err != nil {
		t.Fatalf("the retry after a 429 failed: %v", err)
	}
	if counts, requests := tr.Counts(); counts[TooManyRequests] != 1 || requests != 2 || served.Load() != 1 {
		t.Fatalf("counts %v, %d requests, %d served; want one 429, then the retry served", counts, requests, served.Load())
	}
}

// A dropped watch ends its stream; rules and rates select what is faulted;
// the same seed draws the same faults.
func TestTransportWatchRulesAndSeed(t *testing.T) {
	srv, _ := server(t)
	tr := New(3, Rule{Rate: 1, Kinds: []Kind{DroppedWatch}})
	w, err := client(t, srv, tr).CoreV1().Pods("ns").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case _, open := <-w.ResultChan():
		if open {
			t.Fatal("a dropped watch delivered an event")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a dropped watch stayed open")
	}

	draws := func(seed uint64) []Kind {
		tr := New(seed, Rule{Match: func(r *http.Request, _ []byte) bool { return r.Method == http.MethodGet }, Rate: 0.5,
			Kinds: []Kind{InternalError, Unavailable, Conflict}})
		var out []Kind
		for range 200 {
			get, _ := http.NewRequest(http.MethodGet, "http://x/api/v1/pods", nil)
			put, _ := http.NewRequest(http.MethodPut, "http://x/api/v1/pods", nil)
			k, _ := tr.draw(get, nil)
			if c, _ := tr.draw(put, nil); c != "" {
				t.Fatalf("a request no rule matches was faulted with %s", c)
			}
			if k == Conflict {
				t.Fatal("a GET got a conflict")
			}
			out = append(out, k)
		}
		return out
	}
	a, b := draws(11), draws(11)
	faulted := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("the same seed drew %s then %s at request %d", a[i], b[i], i)
		}
		if a[i] != "" {
			faulted++
		}
	}
	if faulted < 70 || faulted > 130 {
		t.Fatalf("%d of 200 requests faulted at rate 0.5", faulted)
	}
}
