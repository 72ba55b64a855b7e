package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/tidal-autoscaler/tidal/config"
)

func TestSupportsNominations(t *testing.T) {
	for _, tc := range []struct {
		major, minor string
		want         bool
	}{
		{"1", "35", true}, {"1", "36", true}, {"1", "35+", true}, {"2", "0", true},
		{"1", "34", false}, {"1", "34+", false}, {"", "", false}, {"1", "x", false},
	} {
		if got := supportsNominations(tc.major, tc.minor); got != tc.want {
			t.Errorf("supportsNominations(%q, %q) = %v, want %v", tc.major, tc.minor, got, tc.want)
		}
	}
}

// nominate asks the API server its version (GET /version, as discovery
// does): on by default (the flag's default) from 1.35, off on an older server, on a server whose
// version cannot be read, and without asking when the flag is off.
func TestNominateReadsTheServersVersion(t *testing.T) {
	if !config.DefaultScaleUpOptions().NominatePlannedPods {
		t.Fatal("--nominate-planned-pods is off by default")
	}
	for _, tc := range []struct {
		name      string
		flag      bool
		status    int
		version   string // the body's gitVersion, major and minor
		want      bool
		wantAsked bool
	}{
		{"1.35", true, http.StatusOK, `{"major":"1","minor":"35","gitVersion":"v1.35.0"}`, true, true},
		{"1.36 of a provider", true, http.StatusOK, `{"major":"1","minor":"36+","gitVersion":"v1.36.2-eks-1"}`, true, true},
		{"1.34", true, http.StatusOK, `{"major":"1","minor":"34","gitVersion":"v1.34.4"}`, false, true},
		{"unreadable version", true, http.StatusServiceUnavailable, `{}`, false, true},
		{"flag off", false, http.StatusOK, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/version" {
					http.NotFound(w, r)
					return
				}
				asked = true
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.version))
			}))
			defer srv.Close()
			d, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			opts := &config.Options{ScaleUp: config.DefaultScaleUpOptions()}
			opts.ScaleUp.NominatePlannedPods = tc.flag
			if got := nominate(context.Background(), d, opts); got != tc.want || asked != tc.wantAsked {
				t.Fatalf("nominate = %v (server asked: %v), want %v (asked: %v)", got, asked, tc.want, tc.wantAsked)
			}
		})
	}
}
