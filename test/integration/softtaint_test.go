package integration

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/test/faults"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// A burst of nodes needed again loses its deletion candidate taints a few
// per iteration, within --max-bulk-soft-taint-count and
// --max-bulk-soft-taint-time, so the loop never stalls on them.
func TestSoftTaintBurstIsBoundedPerIteration(t *testing.T) {
	parallel(t)
	const nodes = 12
	deleteNodesOnCleanup(t, "sb-")
	groups := fmt.Sprintf("nodeGroups:\n- {name: sb-a, minSize: 0, maxSize: 20, initialSize: %d, zone: z, cpu: '4', memory: 16Gi}\n", nodes)
	preloadNodes(t, groups)
	groupsFile := writeGroups(t, groups)
	t.Run("count", func(t *testing.T) {
		perIteration := softTaintBurst(t, groupsFile, 0, "--max-bulk-soft-taint-count=3")
		if most := maxOf(perIteration); most > 3 {
			t.Fatalf("%d taints taken off in one iteration with --max-bulk-soft-taint-count=3: %v", most, perIteration)
		}
	})
	t.Run("time", func(t *testing.T) {
		// Each write takes 0.7s: the second starts before the second is
		// up, the third would start after it.
		perIteration := softTaintBurst(t, groupsFile, 700*time.Millisecond, "--max-bulk-soft-taint-time=1s")
		if most := maxOf(perIteration); most > 2 {
			t.Fatalf("%d taints taken off in one iteration with --max-bulk-soft-taint-time=1s and 0.7s per write: %v", most, perIteration)
		}
	})
}

// softTaintBurst gives every sb-a node the deletion candidate taint and
// makes it needed (scale-down disabled), runs tidal until every taint is
// off, each write delayed by slow, and returns how many nodes lost their
// taint in each iteration that took some off.
func softTaintBurst(t *testing.T, groupsFile string, slow time.Duration, args ...string) []int {
	ctx := context.Background()
	list, err := groupNodes(t, ctx, "sb-a")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		annotateNode(t, n.Name, scaledown.ScaleDownDisabledAnnotation, "true")
		taint := corev1.Taint{Key: scaledown.DeletionCandidateTaint, Value: strconv.FormatInt(time.Now().Unix(), 10), Effect: corev1.TaintEffectPreferNoSchedule}
		patch := fmt.Sprintf(`{"spec":{"taints":[{"key":%q,"value":%q,"effect":%q}]}}`, taint.Key, taint.Value, taint.Effect)
		if _, err := cluster(t).Client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each taint removal is put down to the iteration it happened in: the
	// number of scale-down steps tidal had completed when it was written.
	listener := testenv.Listen(t)
	address := listener.Addr().String()
	var mu sync.Mutex
	byIteration := map[float64]map[string]bool{}
	tr := faults.New(9)
	tr.Observe(func(r *http.Request, body []byte) {
		node, taint := isTaintWrite(r, body, "sb-a-", scaledown.DeletionCandidateTaint)
		if node == "" || taint {
			return
		}
		step, err := metricValue(address, `tidal_function_duration_seconds_count{function="scaleDown"}`)
		if err != nil {
			t.Errorf("read tidal's metrics: %v", err)
		}
		mu.Lock()
		if byIteration[step] == nil {
			byIteration[step] = map[string]bool{}
		}
		byIteration[step][node] = true
		mu.Unlock()
		time.Sleep(slow)
	})
	tl := startTidalOn(t, listener, tr, append([]string{"--scan-interval=1s", "--leader-elect=false",
		"--local-node-groups=" + groupsFile}, args...)...)
	poll(t, 120*time.Second, "every deletion candidate taint taken off", func(ctx context.Context) (bool, error) {
		list, err := groupNodes(t, ctx, "sb-a")
		for _, n := range list {
			for _, taint := range n.Spec.Taints {
				if taint.Key == scaledown.DeletionCandidateTaint {
					return false, err
				}
			}
		}
		return len(list) > 0, err
	})
	if err := tl.Stop(t); err != nil {
		t.Fatalf("tidal stopped with %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	steps := slices.Sorted(maps.Keys(byIteration))
	counts := make([]int, len(steps))
	for i, s := range steps {
		counts[i] = len(byIteration[s])
	}
	t.Logf("taints taken off per iteration: %v", counts)
	return counts
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
