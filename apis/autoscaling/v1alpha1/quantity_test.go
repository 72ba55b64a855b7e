package v1alpha1

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func TestCheckQuantity(t *testing.T) {
	long := strings.Repeat("9", MaxQuantityLength)
	for _, s := range []string{"0", "1", "-1", "+.5", "0.", "500m", "1.5Gi", "2Ei", "1E", "10P", "1e3", "1E-999", "1e+999", "-7.25e-12", long} {
		if err := CheckQuantity(field.NewPath("q"), s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	pattern := "should match '" + QuantityPattern + "'"
	for _, tc := range []struct{ s, want string }{
		{"1e-2000000000", `q: Invalid value: "1e-2000000000": ` + pattern},
		{"1e1000", `q: Invalid value: "1e1000": ` + pattern},
		{"1e0001", `q: Invalid value: "1e0001": ` + pattern},
		{"1e1.5", `q: Invalid value: "1e1.5": ` + pattern},
		{"1e", `q: Invalid value: "1e": ` + pattern},
		{"1Ki2", `q: Invalid value: "1Ki2": ` + pattern},
		{" 1", `q: Invalid value: " 1": ` + pattern},
		{"", `q: Invalid value: "": ` + pattern},
		{long + "9", "q: Too long: may not be more than 64 bytes"},
		{"0." + strings.Repeat("0", 1_000_000) + "1", "q: Too long: may not be more than 64 bytes"},
	} {
		if err := CheckQuantity(field.NewPath("q"), tc.s); err == nil || err.Error() != tc.want {
			t.Errorf("%.20q: %v, want %s", tc.s, err, tc.want)
		}
	}
}

// FuzzCheckQuantity: what CheckQuantity accepts, Kubernetes' parser
// accepts too, so the CRD's rules may call quantity() on whatever the
// pattern matches.
func FuzzCheckQuantity(f *testing.F) {
	for _, s := range []string{"1", "0.", ".5", "+1.5e-999", "999999999999999999999Ei", "1E", "1e999", "12.34567890123456789Pi"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckQuantity(nil, s) != nil {
			return
		}
		if _, err := resource.ParseQuantity(s); err != nil {
			t.Fatalf("%q matches the pattern but does not parse: %v", s, err)
		}
	})
}

var sources = []string{"resource", "containerResource", "pods", "object", "external"}

// quantityPaths are the paths of every quantity of podAutoscalerJSON's.
func quantityPaths() []string {
	out := []string{"spec.behavior.scaleUp.tolerance", "spec.behavior.scaleDown.tolerance"}
	for i, s := range sources {
		spec, status := fmt.Sprintf("spec.metrics[%d].", i), fmt.Sprintf("status.currentMetrics[%d].%s.current.", i, s)
		out = append(out, spec+s+".target.value", spec+s+".target.averageValue", spec+"watermarks.high", spec+"watermarks.low",
			status+"value", status+"averageValue")
	}
	return out
}

// podAutoscalerJSON is a PodAutoscaler whose every quantity is q.
func podAutoscalerJSON(q string) string {
	var metrics, current []string
	for _, s := range sources {
		target := fmt.Sprintf(`"target":{"type":"Value","value":%[1]s,"averageValue":%[1]s}`, q)
		metrics = append(metrics, fmt.Sprintf(`{"type":"x","%s":{"name":"m",%s},"watermarks":{"high":%s,"low":%s}}`, s, target, q, q))
		current = append(current, fmt.Sprintf(`{"type":"x","%s":{"name":"m","current":{"value":%[2]s,"averageValue":%[2]s}}}`, s, q))
	}
	rules := fmt.Sprintf(`{"tolerance":%s,"stabilizationWindowSeconds":60}`, q)
	return fmt.Sprintf(`{"apiVersion":"autoscaling.tidal.dev/v1alpha1","kind":"PodAutoscaler","metadata":{"name":"web","namespace":"ns"},`+
		`"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":10,"metrics":[%s],"behavior":{"scaleUp":%s,"scaleDown":%s}},`+
		`"status":{"currentReplicas":3,"currentMetrics":[%s]}}`, strings.Join(metrics, ","), rules, rules, strings.Join(current, ","))
}

// TestDecodeLeavesOutUnboundedQuantities: decoding an object whose every
// quantity has a huge negative exponent completes (Kubernetes' parser would
// take hours on each), leaves each out and names it, and keeps the rest;
// in bounds, every quantity is read.
func TestDecodeLeavesOutUnboundedQuantities(t *testing.T) {
	for _, bad := range []string{`"1e-2000000000"`, `1e-2000000000`, `"` + strings.Repeat("7", 1_000_000) + `"`} {
		var pa PodAutoscaler
		if err := json.Unmarshal([]byte(podAutoscalerJSON(bad)), &pa); err != nil {
			t.Fatal(err)
		}
		want := quantityPaths()
		if len(pa.Unread) != len(want) {
			t.Fatalf("%.20s: %d unread, want %d: %q", bad, len(pa.Unread), len(want), pa.Unread)
		}
		for _, w := range want {
			if !containsPrefix(pa.Unread, w+": ") {
				t.Errorf("%.20s: %s not among the unread %q", bad, w, pa.Unread)
			}
		}
		m := pa.Spec.Metrics[1]
		if pa.Name != "web" || pa.Spec.MaxReplicas != 10 || pa.Status.CurrentReplicas != 3 || m.ContainerResource.Target.Value != nil ||
			m.Watermarks.High != nil || *pa.Spec.Behavior.ScaleUp.StabilizationWindowSeconds != 60 || pa.Spec.Behavior.ScaleUp.Tolerance != nil {
			t.Errorf("decoded %+v", pa)
		}
	}
	var pa PodAutoscaler
	if err := json.Unmarshal([]byte(podAutoscalerJSON(`"1500e-3"`)), &pa); err != nil || pa.Unread != nil {
		t.Fatalf("in bounds: %v, unread %q", err, pa.Unread)
	}
	if q := pa.Status.CurrentMetrics[4].External.Current.AverageValue; q == nil || q.Cmp(resource.MustParse("1.5")) != 0 {
		t.Fatalf("a quantity in bounds was not read: %v", q)
	}
}

func containsPrefix(l []string, prefix string) bool {
	for _, s := range l {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestUnmarshalCheckedIsCaseSensitive: the decoder binds a field by its
// exact JSON name, as the API server does, so that no spelling reaches the
// parser unchecked.
func TestUnmarshalCheckedIsCaseSensitive(t *testing.T) {
	var w Watermarks
	refused, err := UnmarshalChecked([]byte(`{"High":"1e-2000000000","low":"1"}`), &w, field.NewPath("w"))
	if err != nil || refused != nil || w.High != nil || w.Low == nil || w.Low.String() != "1" {
		t.Fatalf("refused %v, err %v, %+v", refused, err, w)
	}
	var list []*Watermarks
	refused, err = UnmarshalChecked([]byte(`[null,{"high":"1e9999"}]`), &list, nil)
	if err != nil || len(refused) != 1 || refused[0].Field != "[1].high" || len(list) != 2 || list[1].High != nil {
		t.Fatalf("refused %v, err %v, %+v", refused, err, list)
	}
	if _, err := UnmarshalChecked([]byte(`{"high":`), &w, nil); err == nil {
		t.Fatal("malformed JSON decoded")
	}
}

// TestCRDBoundsEveryQuantity: every quantity field of the CRD has the
// bounded pattern and length (go generate ran crdquantity), and every CEL
// rule that parses a quantity field checks the pattern first: the API
// server runs the rules even on a field whose pattern failed.
func TestCRDBoundsEveryQuantity(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "crd", "autoscaling.tidal.dev_podautoscalers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	quantities, parsed := 0, 0
	operand := regexp.MustCompile(`quantity\(string\((self[.a-z]*)\)\)`)
	walkSchema(crd, "", func(where string, s map[string]any) {
		if s["x-kubernetes-int-or-string"] == true {
			quantities++
			if s["pattern"] != QuantityPattern || s["maxLength"] != float64(MaxQuantityLength) {
				t.Errorf("%s: pattern %v, maxLength %v", where, s["pattern"], s["maxLength"])
			}
		}
		validations, _ := s["x-kubernetes-validations"].([]any)
		for _, v := range validations {
			rule, _ := v.(map[string]any)["rule"].(string)
			if strings.Contains(rule, "isQuantity(") {
				t.Errorf("%s: isQuantity parses whatever it is given: %s", where, rule)
			}
			for _, m := range operand.FindAllStringSubmatch(rule, -1) {
				parsed++
				guard := "!string(" + m[1] + ").matches('" + QuantityPattern + "') || "
				if i := strings.Index(rule, guard); i < 0 || i > strings.Index(rule, m[0]) {
					t.Errorf("%s: %s is parsed without the guard %q first: %s", where, m[1], guard, rule)
				}
			}
		}
	})
	// 2 tolerances, 5 sources' targets and current values (2 each), 2
	// watermarks, 1 activation threshold; the watermarks' rules parse them
	// 6 times, the tolerances' twice, the activation threshold's twice.
	if quantities != 25 || parsed != 10 {
		t.Errorf("%d quantity fields and %d parsed by rules, want 25 and 10", quantities, parsed)
	}
}

// walkSchema calls f on every map under v.
func walkSchema(v any, where string, f func(string, map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(where, v)
		for k, e := range v {
			walkSchema(e, where+"."+k, f)
		}
	case []any:
		for i, e := range v {
			walkSchema(e, fmt.Sprintf("%s[%d]", where, i), f)
		}
	}
}

// BenchmarkDecodePodAutoscaler: decoding a PodAutoscaler with its quantities
// checked, against decoding it without (what the informer did before).
func BenchmarkDecodePodAutoscaler(b *testing.B) {
	data := []byte(podAutoscalerJSON(`"1500m"`))
	b.Run("checked", func(b *testing.B) {
		for b.Loop() {
			var pa PodAutoscaler
			if err := json.Unmarshal(data, &pa); err != nil || pa.Unread != nil {
				b.Fatal(err, pa.Unread)
			}
		}
	})
	b.Run("unchecked", func(b *testing.B) {
		type plain PodAutoscaler
		for b.Loop() {
			var pa plain
			if err := json.Unmarshal(data, &pa); err != nil {
				b.Fatal(err)
			}
		}
	})
}
