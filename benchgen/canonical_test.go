package benchgen

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestPresets checks every preset against the table of the spec: canonical
// hash, nodes at most 50% utilized, object counts. Each cluster is generated
// once and shared by the subtests. S5 is checked only when
// TIDAL_CHECK_S5=1: generating its 2 million pods takes minutes and
// gigabytes, more than make test can give one package; its hash was checked
// with a second, independent implementation of the spec.
func TestPresets(t *testing.T) {
	tests := []struct {
		name    string
		params  Params
		sha256  string
		under50 int
		running int
	}{
		{"S1", S1(), "b96ca07244ddf059663087fb5818583ab89171a97e21529103b1d5cdf5b8a502", 23, 3000},
		{"S2", S2(), "9a67b861e3b505b78a41166ef5c1b179f6b32239ca9e4d4343270a4131e54418", 250, 30000},
		{"S3", S3(), "ac46096148e129c62bc7cda730b9e9467461bc8376add37860c7720ffafa1e43", 1275, 100000},
		{"S4", S4(), "8394076a30b0b9a46507310b9accd4c7b0178e9890e0c3bc0316610488e75419", 3754, 510000},
		{"S5", S5(), "b62e60f03404ca1ce51546f28088323a455a1b1857aa6b494b3f4d51209c0013", 15077, 2040000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "S5" && os.Getenv("TIDAL_CHECK_S5") != "1" {
				t.Skip("S5 takes minutes and gigabytes to generate; TIDAL_CHECK_S5=1 checks it")
			}
			c := Generate(tt.params)
			if got := c.CanonicalSHA256(); got != tt.sha256 {
				t.Errorf("canonical sha256 = %s, want %s", got, tt.sha256)
			}
			if got := countUtil(c.NodeUtil, 50); got != tt.under50 {
				t.Errorf("nodes with drawn u <= 50%% = %d, want %d", got, tt.under50)
			}
			if got := countUnder50FromObjects(c); got != tt.under50 {
				t.Errorf("nodes with requests <= 50%% of allocatable = %d, want %d", got, tt.under50)
			}
			checkCounts(t, c, tt.running)
		})
	}
}

// countUtil counts the utilizations at most limit.
func countUtil(util []int, limit int) int {
	n := 0
	for _, u := range util {
		if u <= limit {
			n++
		}
	}
	return n
}

// countUnder50FromObjects counts the nodes whose pods request at most half
// of the node's allocatable cpu and memory (Cluster Autoscaler's scale-down
// utilization, max of the two, against a 0.5 threshold).
func countUnder50FromObjects(c *Cluster) int {
	cpu := map[string]int64{}
	mem := map[string]int64{}
	for _, p := range c.RunningPods {
		req := p.Spec.Containers[0].Resources.Requests
		cpu[p.Spec.NodeName] += req.Cpu().MilliValue()
		mem[p.Spec.NodeName] += req.Memory().Value()
	}
	n := 0
	for _, node := range c.Nodes {
		alloc := node.Status.Allocatable
		if 2*cpu[node.Name] <= alloc.Cpu().MilliValue() && 2*mem[node.Name] <= alloc.Memory().Value() {
			n++
		}
	}
	return n
}

// checkCounts checks the sizes of every object list.
func checkCounts(t *testing.T, c *Cluster, running int) {
	t.Helper()
	p := c.Params
	got := []int{len(c.NodeGroups), len(c.Nodes), len(c.NodeUtil), len(c.RunningPods), len(c.PendingGroups), len(c.PendingPods)}
	want := []int{p.K, p.N, p.N, running, p.G, p.P}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("object counts (groups, nodes, util, running, pending groups, pending) = %v, want %v", got, want)
			break
		}
	}
	if want := p.Apps + p.G; len(c.ReplicaSets) != want {
		t.Errorf("%d ReplicaSets, want %d", len(c.ReplicaSets), want)
	}
}

// TestCanonicalExampleLines checks the S1 listing against the example lines
// of the spec and its overall layout.
func TestCanonicalExampleLines(t *testing.T) {
	c := Generate(S1())
	var buf bytes.Buffer
	if err := c.WriteCanonical(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if want := 1 + 5 + 100 + 3000 + 10 + 300; len(lines) != want {
		t.Fatalf("%d lines, want %d", len(lines), want)
	}
	want := map[int]string{
		0:    "# cabench-gen v1 seed=42 N=100 M=30 P=300 G=10 K=5 under=25:10-40 busy=80-95 jitter=5 apps=64 ngmax=100000",
		1:    "NG ng-00 cpu=4000 memMi=16384 pods=110 zone=zone-a taint=0 size=20 min=0 max=100000",
		5:    "NG ng-04 cpu=4000 memMi=16384 pods=110 zone=zone-b taint=1 size=20 min=0 max=100000",
		6:    "N node-00000 ng=ng-00 util=13",
		106:  "R run-00000-000 node=node-00000 cpu=16 memMi=72 rs=rs-run-034 tol=0",
		3106: "PG 000 n=30 cpu=3000 memMi=512 zone=zone-c tol=0 aa=0",
		3116: "P pend-000-00000 rs=rs-pend-000",
		3415: "P pend-009-00029 rs=rs-pend-009",
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d = %q, want %q", i, lines[i], w)
		}
	}
}

// TestPendingGroupLines checks the class columns of the PG lines.
func TestPendingGroupLines(t *testing.T) {
	c := Generate(S1())
	var buf bytes.Buffer
	if err := c.WriteCanonical(&buf); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	g := 0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "PG ") {
			continue
		}
		class := g % 10
		hasZone := !strings.Contains(line, " zone=-")
		if hasZone != (class <= 1) || strings.Contains(line, "tol=1") != (class == 2) ||
			strings.Contains(line, "aa=1") != (class == 3) {
			t.Errorf("group %d (class %d): %q", g, class, line)
		}
		g++
	}
	if g != 10 {
		t.Errorf("%d PG lines, want 10", g)
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errTest }

func TestWriteCanonicalReportsWriteErrors(t *testing.T) {
	if err := Generate(S1()).WriteCanonical(failWriter{}); err != errTest {
		t.Errorf("WriteCanonical to a failing writer = %v, want %v", err, errTest)
	}
}
