package crd_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// paYAML is a PodAutoscaler with one schedule and a watermark, the
// duration, lead time and watermark given as JSON strings, and extra
// appended to the spec (YAML in flow style, possibly empty).
func paYAML(duration, lead, high, extra string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`apiVersion: autoscaling.tidal.dev/v1alpha1
kind: PodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 10
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}, watermarks: {high: %s}}]
  schedules: [{name: peak, start: "0 8 * * *", duration: %s, leadTime: %s, minReplicas: 2}]
%s`, q(high), q(duration), q(lead), extra)
}

// object reads a YAML document as the API server reads a request's JSON
// body (whole numbers as int64).
func object(doc string) (map[string]any, error) {
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("not an object: %s", raw)
	}
	return obj, nil
}

// goodPA is a PodAutoscaler "good" the API server admits.
func goodPA(tb testing.TB) map[string]any {
	tb.Helper()
	obj, err := object(strings.Replace(paYAML("1h", "1h", "80", ""), "name: web,", "name: good,", 1))
	if err != nil {
		tb.Fatal(err)
	}
	return obj
}

// decodeList decodes obj, as JSON, with the typed client's codec, first
// alone and then inside a list beside a good PodAutoscaler, as an informer
// lists them; the list must always decode, and yield both.
func decodeList(t *testing.T, obj map[string]any, good map[string]any) *v1alpha1.PodAutoscaler {
	t.Helper()
	list := map[string]any{"apiVersion": "autoscaling.tidal.dev/v1alpha1", "kind": "PodAutoscalerList",
		"metadata": map[string]any{"resourceVersion": "1"}, "items": []any{obj, good}}
	raw, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	// The typed client's serializer (v1alpha1.NewForConfig).
	ns := serializer.NewCodecFactory(v1alpha1.Scheme).WithoutConversion()
	info, _ := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeJSON)
	out := &v1alpha1.PodAutoscalerList{}
	if err := runtime.DecodeInto(ns.DecoderToVersion(info.Serializer, v1alpha1.SchemeGroupVersion), raw, out); err != nil {
		t.Fatalf("a list holding %s does not decode: %v", raw, err)
	}
	if len(out.Items) != 2 || out.Items[1].Name != "good" || len(out.Items[1].Invalid)+len(out.Items[1].Unread) > 0 {
		t.Fatalf("a list holding %s yields %+v, want the object and the good one", raw, out.Items)
	}
	return &out.Items[0]
}

// FuzzAdmittedPodAutoscalersDecode: whatever the API server admits, tidal
// decodes whole (nothing left unread); whatever tidal's decoder refuses of
// a duration or quantity, the API server refuses at the same field with the
// same message; and a list holding any object, admitted or not, decodes,
// with the bad one named on itself.
func FuzzAdmittedPodAutoscalersDecode(f *testing.F) {
	for _, seed := range [][4]string{
		{"1h", "30m", "80", ""},
		{"99999999999h", "1h", "80", ""},
		{"1h", "2562048h", "80", ""},
		{"8784h", "744h", "1P", ""},
		{"8784h0.5s", "744h1ns", "1e-2000000000", ""},
		{"999999h999999h99999h", "0s", "1.5", ""},
		{"1.5h", "90m", "2k", "  minReplicas: 3000000000\n"},
		{"1h", "1h", "80", "  behavior: {scaleUp: {stabilizationWindowSeconds: 3601}}\n"},
		{"-1h", "1h", "80", "  minReplicas: \"x\"\n"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	adm := newAdmission(f)
	good := goodPA(f)
	f.Fuzz(func(t *testing.T, duration, lead, high, extra string) {
		obj, err := object(paYAML(duration, lead, high, extra))
		if err != nil {
			return // not YAML, or not an object: no API server stores it
		}
		if _, ok := obj["metadata"].(map[string]any); !ok {
			return // extra replaced the metadata: the API server refuses it
		}
		refusedByAPI := adm.admit(obj)
		pa := decodeList(t, obj, good)
		named := append(append([]string{}, pa.Invalid...), pa.Unread...)
		if len(refusedByAPI) == 0 && len(named) > 0 {
			t.Fatalf("the API server admits %v, tidal leaves unread: %v", obj, named)
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		refused, err := v1alpha1.UnmarshalChecked(raw, &v1alpha1.PodAutoscaler{}, nil)
		if err != nil {
			return // the object does not decode at all: named in Invalid, checked above
		}
		if rulesSkipped(refusedByAPI) {
			// The API server checks the CRD's validation rules (which
			// bound durations) only on an object its schema admits:
			// refused for another field, it names no more.
			return
		}
		for _, e := range refused {
			if !refusedAt(refusedByAPI, e) {
				t.Errorf("tidal refuses %v; the API server says %v", e, refusedByAPI)
			}
		}
	})
}

// rulesSkipped tells whether the API server refused an object without
// evaluating the CRD's validation rules, which it does when the object
// already breaks the schema.
func rulesSkipped(errs field.ErrorList) bool {
	for _, a := range errs {
		if strings.Contains(a.Detail, "some validation rules were not checked") {
			return true
		}
	}
	return false
}

// refusedAt tells whether errs refuse the field of e with e's message.
func refusedAt(errs field.ErrorList, e *field.Error) bool {
	for _, a := range errs {
		if a.Field == e.Field && strings.Contains(a.Error(), e.Detail) {
			return true
		}
	}
	return false
}
