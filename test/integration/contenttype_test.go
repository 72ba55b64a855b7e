package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/test/faults"
)

// tidal's clients of built-in objects speak Kubernetes' protobuf, as
// --kube-api-content-type says by default (Cluster Autoscaler's default
// too): the lists and watches of its informers ask for it, and its writes
// send it. The API server serves custom resources in JSON only, so the pod
// loop's clients keep JSON (test/podloop runs them).
func TestBuiltinObjectsTravelAsProtobuf(t *testing.T) {
	parallel(t)
	var mu sync.Mutex
	seen := map[string]string{} // "GET nodes", "write configmaps" → header
	tr := faults.New(1)
	tr.Observe(func(r *http.Request, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes":
			seen["GET nodes (Accept)"] = r.Header.Get("Accept")
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods":
			seen["GET pods (Accept)"] = r.Header.Get("Accept")
		case (r.Method == http.MethodPost || r.Method == http.MethodPut) && strings.HasSuffix(strings.TrimSuffix(r.URL.Path, "/"+config.NewOptions().ScaleUp.StatusConfigMapName), "/configmaps"):
			seen["write of the status ConfigMap (Content-Type)"] = r.Header.Get("Content-Type")
		}
	})
	groups := writeGroups(t, "nodeGroups:\n- {name: ct-a, minSize: 0, maxSize: 1, zone: z, cpu: '2', memory: 4Gi}\n")
	startTidalWith(t, tr, "--leader-elect=false", "--local-node-groups="+groups)
	poll(t, 60*time.Second, "tidal's node and pod lists and a status write", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 3, nil
	})
	mu.Lock()
	defer mu.Unlock()
	for what, header := range seen {
		if !strings.HasPrefix(header, config.ContentTypeProtobuf) {
			t.Errorf("%s: %q, want %s first", what, header, config.ContentTypeProtobuf)
		}
	}
	if t.Failed() {
		t.Logf("requests seen: %v", seen)
	}
}
