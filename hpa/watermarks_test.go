package hpa

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// TestWatermarkValidation: Validate refuses what the PodAutoscaler CRD
// refuses, with its messages, at the field's path; WatermarkReplicas
// refuses only what its arithmetic cannot take.
func TestWatermarkValidation(t *testing.T) {
	path := field.NewPath("spec", "metrics").Index(0).Child("watermarks")
	for _, tc := range []struct {
		name string
		w    Watermarks
		// want are Validate's errors; computable marks a spec
		// WatermarkReplicas accepts all the same.
		want       []string
		computable bool
	}{
		{"neither watermark", Watermarks{}, []string{"spec.metrics[0].watermarks: Required value: set high, low or both"}, false},
		{"high 0", Watermarks{High: qp("0")}, []string{`spec.metrics[0].watermarks.high: Invalid value: "0": must be greater than 0`}, false},
		{"low negative", Watermarks{Low: qp("-1")}, []string{`spec.metrics[0].watermarks.low: Invalid value: "-1": must be greater than 0`}, false},
		{"low above high", Watermarks{High: qp("1"), Low: qp("2")}, []string{`spec.metrics[0].watermarks.low: Invalid value: "2": must not be above high`}, false},
		{"high above 1P", Watermarks{High: qp("1000000000000001")}, []string{`spec.metrics[0].watermarks.high: Invalid value: "1000000000000001": must be at most 1P (10^15)`}, true},
		{"high 10P and low 2e15", Watermarks{High: qp("10P"), Low: qp("2e15")}, []string{
			`spec.metrics[0].watermarks.high: Invalid value: "10P": must be at most 1P`, `spec.metrics[0].watermarks.low: Invalid value: "2e15": must be at most 1P`}, true},
		{"high tolerance 101", Watermarks{High: qp("1"), HighTolerancePercent: int32p(101)},
			[]string{"spec.metrics[0].watermarks.highTolerancePercent: Invalid value: 101: should be less than or equal to 100"}, false},
		{"low tolerance -1", Watermarks{Low: qp("1"), LowTolerancePercent: int32p(-1)},
			[]string{"spec.metrics[0].watermarks.lowTolerancePercent: Invalid value: -1: should be greater than or equal to 0"}, false},
		{"scale-up step -5", Watermarks{High: qp("1"), MaxScaleUpPercent: int32p(-5)},
			[]string{"spec.metrics[0].watermarks.maxScaleUpPercent: Invalid value: -5: should be greater than or equal to 0"}, false},
		{"scale-up step 1001", Watermarks{High: qp("1"), MaxScaleUpPercent: int32p(1001)},
			[]string{"spec.metrics[0].watermarks.maxScaleUpPercent: Invalid value: 1001: should be less than or equal to 1000"}, true},
		{"scale-up step MaxInt32", Watermarks{High: qp("1"), MaxScaleUpPercent: int32p(math.MaxInt32)},
			[]string{"spec.metrics[0].watermarks.maxScaleUpPercent: Invalid value: 2147483647: should be less than or equal to 1000"}, true},
		{"scale-down step 101", Watermarks{Low: qp("1"), MaxScaleDownPercent: int32p(101)},
			[]string{"spec.metrics[0].watermarks.maxScaleDownPercent: Invalid value: 101: should be less than or equal to 100"}, false},
		{"equal watermarks", Watermarks{High: qp("1"), Low: qp("1")}, nil, true},
		{"at the bounds", Watermarks{High: qp("1P"), Low: qp("1n"), HighTolerancePercent: int32p(100), LowTolerancePercent: int32p(0),
			MaxScaleUpPercent: int32p(1000), MaxScaleDownPercent: int32p(100)}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.w.Validate(path)
			if len(errs) != len(tc.want) {
				t.Fatalf("Validate: %v, want %d errors: %q", errs, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if got := errs[i].Error(); !strings.HasPrefix(got, want) {
					t.Errorf("Validate: %q, want %q", got, want)
				}
			}
			if _, err := WatermarkReplicas(5, 1000, &tc.w, 1, 10); (err == nil) != tc.computable {
				t.Errorf("WatermarkReplicas: error %v, computable %v", err, tc.computable)
			}
		})
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

// TestWatermarksTotal: watermarks the API accepts, however large or small,
// give an answer and never a panic: a quantity beyond the int64 range of
// milli-units (10P is 1e19m) once made the calculation divide by zero.
func TestWatermarksTotal(t *testing.T) {
	tests := []struct {
		name    string
		w       Watermarks
		current int32
		value   int64
		want    int32
	}{
		{"high 10P: far above any value", Watermarks{High: qp("10P")}, 5, math.MaxInt64, 5},
		{"high 1e18, low 1n, huge step", Watermarks{High: qp("1e18"), Low: qp("1n"), MaxScaleUpPercent: int32p(math.MaxInt32)}, 5, 1, 5},
		{"low 1n: a negative value is below it", Watermarks{High: qp("1e18"), Low: qp("1n")}, 5, -1, 0},
		{"high 1n: 1m is a million times above it", Watermarks{High: qp("1n")}, 5, 1, 5_000_000},
		{"high 1n: the count saturates", Watermarks{High: qp("1n")}, 5, math.MaxInt64, math.MaxInt32},
		{"high 1n with the step limit", Watermarks{High: qp("1n"), MaxScaleUpPercent: int32p(math.MaxInt32)}, 5, math.MaxInt64, 107_374_187},
		{"high 1e100", Watermarks{High: qp("1e100")}, 5, math.MaxInt64, 5},
		{"low 1e100: every value is below, none reaches a pod", Watermarks{Low: qp("1e100")}, 5, math.MaxInt64, 0},
		{"low 1e100000 with zero tolerance", Watermarks{Low: qp("1e100000"), LowTolerancePercent: int32p(0)}, math.MaxInt32, math.MaxInt64, 0},
		{"low 100% tolerance: only negative values are below", Watermarks{Low: qp("1e30"), LowTolerancePercent: int32p(100)}, 5, 0, 5},
		{"binary 1Ei against the int64 range", Watermarks{High: qp("1Ei")}, 7, math.MaxInt64, 7},
		{"binary 1Ki", Watermarks{High: qp("1Ki")}, 7, 2048000, 14},
		{"high 1.5n is 2n, as parsed", Watermarks{High: qp("1.5n")}, 1, 1, 500_000},
		{"negative value far below a 1 low", Watermarks{Low: qp("1")}, math.MaxInt32, math.MinInt64, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WatermarkReplicas(tc.current, tc.value, &tc.w, 1, math.MaxInt32)
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
			if want := ratWatermark(tc.current, tc.value, &tc.w, 1, math.MaxInt32); want != got {
				t.Fatalf("rational arithmetic says %d, got %d", want, got)
			}
		})
	}
}

// TestWatermarksExactOverQuantities compares WatermarkReplicas with
// rational arithmetic over quantities of every suffix and magnitude.
func TestWatermarksExactOverQuantities(t *testing.T) {
	g := newGen(7, epoch())
	suffixes := []string{"n", "u", "m", "", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e-7", "e3", "e19", "e40"}
	quantity := func() *resource.Quantity {
		return qp(fmt.Sprintf("%d%s", max(1, g.between(1, 1<<30)>>g.between(0, 29)), suffixes[g.r.IntN(len(suffixes))]))
	}
	for range 20000 {
		w := Watermarks{High: quantity()}
		if g.chance(0.5) {
			w.Low = quantity()
			if w.Low.Cmp(*w.High) > 0 {
				w.Low, w.High = w.High, w.Low
			}
		}
		if g.chance(0.3) {
			w.HighTolerancePercent, w.LowTolerancePercent = int32p(int32(g.between(0, 100))), int32p(int32(g.between(0, 100)))
		}
		if g.chance(0.3) {
			w.MaxScaleUpPercent, w.MaxScaleDownPercent = int32p(int32(g.between(0, math.MaxInt32))), int32p(int32(g.between(0, 100)))
		}
		current := int32(g.between(1, math.MaxInt32))
		value := g.r.Int64() >> g.between(0, 62)
		if g.chance(0.2) {
			value = -value
		}
		got, err := WatermarkReplicas(current, value, &w, 1, math.MaxInt32)
		if err != nil {
			t.Fatalf("%+v: %v", w, err)
		}
		if want := ratWatermark(current, value, &w, 1, math.MaxInt32); got != want {
			t.Fatalf("high %v low %v, current %d, value %dm: got %d, want %d", w.High, w.Low, current, value, got, want)
		}
	}
}

// ratWatermark is the watermark rule in rational arithmetic.
func ratWatermark(current int32, value int64, w *Watermarks, minR, maxR int32) int32 {
	v := new(big.Rat).SetFrac64(value, 1000)
	rat := func(q *resource.Quantity) *big.Rat {
		r, ok := new(big.Rat).SetString(q.AsDec().String())
		if !ok {
			panic(q.String())
		}
		return r
	}
	scaled := func(q *resource.Quantity, percent int64) *big.Rat {
		return new(big.Rat).Mul(rat(q), big.NewRat(percent, 100))
	}
	ratio := func(q *resource.Quantity) *big.Rat {
		return new(big.Rat).Quo(new(big.Rat).Mul(big.NewRat(int64(current), 1), v), rat(q))
	}
	clamp := func(x *big.Int) int32 {
		if x.Sign() < 0 {
			return 0
		}
		if x.Cmp(big.NewInt(math.MaxInt32)) > 0 {
			return math.MaxInt32
		}
		return int32(x.Int64())
	}
	if w.High != nil && v.Cmp(scaled(w.High, 100+int64(orDefault(w.HighTolerancePercent)))) > 0 {
		r := ratio(w.High)
		c := new(big.Int).Quo(r.Num(), r.Denom()) // truncates: ceil for positive r when not whole
		if !r.IsInt() && r.Sign() > 0 {
			c.Add(c, big.NewInt(1))
		}
		p := clamp(c)
		if w.MaxScaleUpPercent != nil {
			p = min(p, ScaleUpStep(current, *w.MaxScaleUpPercent, maxR))
		}
		return p
	}
	if w.Low != nil && v.Cmp(scaled(w.Low, 100-int64(orDefault(w.LowTolerancePercent)))) < 0 {
		r := ratio(w.Low)
		c := new(big.Int).Quo(r.Num(), r.Denom())
		if !r.IsInt() && r.Sign() < 0 {
			c.Sub(c, big.NewInt(1))
		}
		p := clamp(c)
		if w.MaxScaleDownPercent != nil {
			p = max(p, ScaleDownStep(current, *w.MaxScaleDownPercent, minR))
		}
		return p
	}
	return current
}
