package podloop

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/test/faults"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// A failed discovery of the PodAutoscaler API says nothing of the CRD: the
// pod loop asks again within a second or so, not after the ten seconds it
// leaves a CRD that is not installed.
func TestPodLoopAsksAgainAfterADiscoveryError(t *testing.T) {
	parallel(t)
	hpaInstallCRD(t)
	hpaNamespace(t)
	const path = "/apis/autoscaling.tidal.dev/v1alpha1"
	var mu sync.Mutex
	var asked []time.Time
	tr := faults.New(1, faults.Rule{Match: func(r *http.Request, _ []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		return r.URL.Path == path && len(asked) == 0
	}, Rate: 1, Kinds: []faults.Kind{faults.Unavailable}})
	tr.Observe(func(r *http.Request, _ []byte) {
		if r.URL.Path == path {
			mu.Lock()
			asked = append(asked, time.Now())
			mu.Unlock()
		}
	})
	ctx := testenv.LogOnFailure(context.Background(), t, 2)
	testenv.StartTidalWith(ctx, t, cluster(t).KubeconfigPath, []app.Option{app.WithTransport(tr.Wrap)},
		"--leader-elect=false", "--local-node-groups="+writeGroups(t, hpaGroups), "--scan-interval=1s", "--hpa-sync-period=1s")
	poll(t, 30*time.Second, "the pod loop to ask discovery twice", func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(asked) >= 2, nil
	})
	mu.Lock()
	gap := asked[1].Sub(asked[0])
	mu.Unlock()
	if counts, _ := tr.Counts(); counts[faults.Unavailable] != 1 {
		t.Fatalf("faults %v: the first discovery was not failed", counts)
	}
	t.Logf("asked again %v after the failed discovery", gap.Round(time.Millisecond))
	if gap >= 9*time.Second {
		t.Fatalf("the pod loop asked again %v after a failed discovery, as if the CRD were not installed", gap.Round(time.Millisecond))
	}
}
