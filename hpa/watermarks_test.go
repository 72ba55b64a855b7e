package hpa

import (
	"math"
	"math/big"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

func qp(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// TestWatermarkWorkedExamples covers the brief's examples.
func TestWatermarkWorkedExamples(t *testing.T) {
	tests := []struct {
		name       string
		current    int32
		value      int64
		w          Watermarks
		minR, maxR int32
		want       int32
	}{
		{"5 replicas at 1500m with high 1200m -> 7", 5, 1500, Watermarks{High: qp("1200m")}, 1, 100, 7},
		{"7 replicas at 300m with low 400m -> 5", 7, 300, Watermarks{Low: qp("400m")}, 1, 100, 5},
		{"3 -> 4 with up 20% and max 7", 3, 5000, Watermarks{High: qp("1"), MaxScaleUpPercent: int32p(20)}, 1, 7, 4},
		{"7 -> 6 with down 1% and min 2", 7, 10, Watermarks{Low: qp("1"), MaxScaleDownPercent: int32p(1)}, 2, 100, 6},
		{"up step capped by max", 6, 5000, Watermarks{High: qp("1"), MaxScaleUpPercent: int32p(50)}, 1, 7, 7},
		{"down step floored by min", 7, 10, Watermarks{Low: qp("1"), MaxScaleDownPercent: int32p(90)}, 2, 100, 2},
		{"a small proposal is not raised by the step", 10, 1050, Watermarks{High: qp("1"), MaxScaleUpPercent: int32p(50)}, 1, 100, 11},
		{"between the watermarks: no change", 7, 800, Watermarks{High: qp("1"), Low: qp("500m")}, 1, 100, 7},
		{"at high*1.01 exactly: no change", 5, 1212, Watermarks{High: qp("1200m")}, 1, 100, 5},
		{"just above high*1.01", 5, 1213, Watermarks{High: qp("1200m")}, 1, 100, 6},
		{"at low*0.99 exactly: no change", 7, 396, Watermarks{Low: qp("400m")}, 1, 100, 7},
		{"just below low*0.99", 7, 395, Watermarks{Low: qp("400m")}, 1, 100, 6},
		{"zero tolerance", 5, 1201, Watermarks{High: qp("1200m"), HighTolerancePercent: int32p(0)}, 1, 100, 6},
		{"wider tolerance holds", 5, 1300, Watermarks{High: qp("1200m"), HighTolerancePercent: int32p(10)}, 1, 100, 5},
		{"only high: low values never scale down", 7, 1, Watermarks{High: qp("1200m")}, 1, 100, 7},
		{"only low: high values never scale up", 7, 1 << 40, Watermarks{Low: qp("400m")}, 1, 100, 7},
		{"zero usage scales to zero (min applies later)", 7, 0, Watermarks{Low: qp("400m")}, 1, 100, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WatermarkReplicas(tc.current, tc.value, &tc.w, tc.minR, tc.maxR)
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestWatermarkValidation(t *testing.T) {
	bad := []Watermarks{
		{},
		{High: qp("0")},
		{Low: qp("-1")},
		{High: qp("1"), Low: qp("2")},
		{High: qp("1"), HighTolerancePercent: int32p(101)},
		{Low: qp("1"), LowTolerancePercent: int32p(-1)},
		{High: qp("1"), MaxScaleUpPercent: int32p(-5)},
		{Low: qp("1"), MaxScaleDownPercent: int32p(101)},
	}
	for i, w := range bad {
		if _, err := WatermarkReplicas(5, 1000, &w, 1, 10); err == nil {
			t.Errorf("case %d: %+v accepted", i, w)
		}
	}
	ok := Watermarks{High: qp("1"), Low: qp("1")}
	if err := ok.Validate(); err != nil {
		t.Errorf("equal watermarks rejected: %v", err)
	}
}

// TestWatermarkExactArithmetic compares huge values (memory in milli-bytes)
// with rational arithmetic.
func TestWatermarkExactArithmetic(t *testing.T) {
	g := newGen(42, epoch())
	for range 2000 {
		current := int32(g.between(1, math.MaxInt32/2))
		high := int64(g.between(1, 1<<30)) << g.between(0, 30)
		value := high + int64(g.between(1, 1<<30))<<g.between(0, 32)
		w := Watermarks{High: resource.NewMilliQuantity(high, resource.DecimalSI), HighTolerancePercent: int32p(0)}
		got, err := WatermarkReplicas(current, value, &w, 1, math.MaxInt32)
		if err != nil {
			t.Fatal(err)
		}
		r := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(int64(current)), big.NewInt(value)), big.NewInt(high))
		c := new(big.Int).Quo(r.Num(), r.Denom())
		if !r.IsInt() {
			c.Add(c, big.NewInt(1))
		}
		if c.Cmp(big.NewInt(math.MaxInt32)) > 0 {
			c.SetInt64(math.MaxInt32)
		}
		if int64(got) != c.Int64() {
			t.Fatalf("ceil(%d*%d/%d) = %d, want %s", current, value, high, got, c)
		}
	}
}

// TestWatermarksInPipeline runs watermarks through the metric combination:
// a Utilization target compares whole-percent utilization with High "90".
func TestWatermarksInPipeline(t *testing.T) {
	in := combineInput(4, []autoscalingv2.MetricSpec{cpuUtil(50), extAvg("q", 1000)}, MetricData{}, proposing(4))
	in.Data[0] = MetricData{PodMetrics: uniform(in.Pods, 950)} // 95% utilization
	in.Watermarks = []*Watermarks{{High: qp("90"), Low: qp("40")}}
	c := ComputeReplicasForMetrics(in)
	// Without watermarks 95% of 50% would ask for 8; the band asks ceil(4*95/90) = 5.
	if c.Replicas != 5 || c.Err != nil {
		t.Fatalf("got %d, %v; want 5", c.Replicas, c.Err)
	}
	in.Data[0] = MetricData{PodMetrics: uniform(in.Pods, 600)} // 60%: inside the band
	if c = ComputeReplicasForMetrics(in); c.Replicas != 4 {
		t.Fatalf("inside the band: got %d, want 4", c.Replicas)
	}
	in.Watermarks = []*Watermarks{{High: qp("1"), Low: qp("2")}}
	c = ComputeReplicasForMetrics(in)
	if c.Replicas != 4 || c.Err == nil {
		t.Fatalf("invalid watermarks must fail the metric: got %d, %v", c.Replicas, c.Err)
	}
	in.Watermarks = []*Watermarks{nil, {Low: qp("2")}} // the external metric at 1000m/pod < 1.98
	in.Data[0] = MetricData{PodMetrics: uniform(in.Pods, 200)}
	if c = ComputeReplicasForMetrics(in); c.Replicas != 2 {
		t.Fatalf("second metric's watermark: got %d, want max(ceil(4*0.4)=2, floor(4*1/2)=2)", c.Replicas)
	}
}

func TestWatermarksDeepCopy(t *testing.T) {
	w := &Watermarks{High: qp("1"), Low: qp("500m"), MaxScaleUpPercent: int32p(20)}
	c := w.DeepCopy()
	*c.MaxScaleUpPercent = 50
	c.High.Add(resource.MustParse("1"))
	if *w.MaxScaleUpPercent != 20 || w.High.Cmp(resource.MustParse("1")) != 0 || c.Low.Cmp(*w.Low) != 0 {
		t.Fatalf("copy shares memory: %+v %+v", w, c)
	}
}
