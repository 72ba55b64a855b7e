package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// BenchmarkLeaderHandover measures how long a standby takes to lead after
// the leader is told to stop (SIGTERM), with the default lease settings
// (15 s lease, 10 s renew deadline, 2 s retry period): from the stop to
// the Lease naming the standby. The leader releases the Lease as it stops;
// the standby only sees that at its next try, every retry period (jittered
// by up to 1.2 times more, as client-go does), so the stop comes at a
// random moment of the standby's cycle. Run it with
//
//	go test -run '^$' -bench LeaderHandover -benchtime 20x ./test/integration/
func BenchmarkLeaderHandover(b *testing.B) {
	groups := testenv.WriteGroups(b, "nodeGroups:\n- {name: ho-a, minSize: 0, maxSize: 1, zone: z, cpu: '2', memory: 4Gi}\n")
	var took []time.Duration
	b.StopTimer()
	for i := range b.N {
		lease := fmt.Sprintf("tidal-handover-%d-%d", time.Now().UnixNano()%1e6, i)
		flags := []string{"--local-node-groups=" + groups, "--leader-elect-resource-name=" + lease, "--hpa=false"}
		first := testenv.StartTidal(context.Background(), b, cluster(b).KubeconfigPath, flags...)
		leader := waitHolder(b, lease, "")
		second := testenv.StartTidal(context.Background(), b, cluster(b).KubeconfigPath, flags...)
		waitServing(b, second.Address)
		time.Sleep(time.Second + rand.N(3*time.Second)) // the stop at an arbitrary moment of the standby's cycle

		b.StartTimer()
		stopped := time.Now()
		if err := first.Stop(b); err != nil {
			b.Fatalf("the leader stopped with %v", err)
		}
		waitHolder(b, lease, leader)
		took = append(took, time.Since(stopped))
		b.StopTimer()
		if err := second.Stop(b); err != nil {
			b.Fatalf("the second replica stopped with %v", err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[0].Milliseconds()), "min-ms")
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "max-ms")
}

// waitHolder waits, polling every 10 ms, until the Lease names a holder
// other than not, and returns it.
func waitHolder(b *testing.B, lease, not string) string {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		l, err := cluster(b).Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), lease, metav1.GetOptions{})
		if err == nil {
			if id := ptr.Deref(l.Spec.HolderIdentity, ""); id != "" && id != not {
				return id
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("no new holder of Lease %s within 60s", lease)
	return ""
}

// waitServing waits until tidal at addr answers /healthz, which it does
// just before it first tries the Lease.
func waitServing(b *testing.B, addr string) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("tidal at %s never served /healthz", addr)
}
