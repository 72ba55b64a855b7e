package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCheckDuration(t *testing.T) {
	path := field.NewPath("spec", "schedules").Index(0).Child("duration")
	year := 8784 * time.Hour
	for _, tc := range []struct {
		s    string
		max  time.Duration
		want string // "" accepted
	}{
		{"1h30m", year, ""},
		{"8784h", year, ""},
		{"1000000s", year, ""}, // stored before the pattern bounded digits: tidal holds it
		{"8784h1ns", year, "must be at most 8784h (366 days)"},
		{"99999999999h", year, "should match"},
		{"2562048h", year, "should match"},
		{"2562048h", 0, "should match"},
		{"100000000000000000000ns", year, "may not be more than 20 bytes"},
		{"999999h999999h99999h", year, "must be at most 8784h (366 days)"},
		{"-1h", year, "should match"},
		{"", year, "should match"},
		{"1h", 0, ""},
	} {
		err := CheckDuration(path, tc.s, tc.max)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckDuration(%q, %v) = %v, want nil", tc.s, tc.max, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || err.Field != path.String()):
			t.Errorf("CheckDuration(%q, %v) = %v, want %q at %s", tc.s, tc.max, err, tc.want, path)
		}
	}
}

// Every string the CRD's pattern and length admit parses as a Go duration:
// the longest integer parts in 20 characters.
func TestDurationPatternHoldsOnlyWhatGoParses(t *testing.T) {
	for _, s := range []string{"999999h999999h99999h", "999999.9h999999.9h9h", "999999h999999h9999m", "999999999999999999ns"} {
		if len(s) > MaxDurationLength || !durationRE.MatchString(s) {
			continue
		}
		if _, err := time.ParseDuration(s); err != nil {
			t.Errorf("%q matches the pattern but does not parse: %v", s, err)
		}
	}
}

// A PodAutoscaler whose schedule's duration overflows, or whose spec does
// not decode at all, decodes: the field is left out and named in Invalid,
// the rest is read.
func TestDecodeNamesUnreadableValues(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{`{"maxReplicas": 3, "schedules": [{"name": "a", "start": "@daily", "duration": "99999999999h", "minReplicas": 1}]}`,
			`spec.schedules[0].duration: Invalid value: "99999999999h": should match`},
		{`{"maxReplicas": 3, "schedules": [{"name": "a", "start": "@daily", "duration": "1h", "leadTime": "745h", "minReplicas": 1}]}`,
			`spec.schedules[0].leadTime: Invalid value: "745h": must be at most 744h (31 days)`},
		{`{"maxReplicas": 3, "schedules": [{"name": "a", "start": "@daily", "duration": 5, "minReplicas": 1}]}`,
			`spec.schedules[0].duration: Invalid value: 5: must be a string`},
		{`{"maxReplicas": 3000000000}`, `spec: `},
	} {
		raw := `{"apiVersion": "autoscaling.tidal.dev/v1alpha1", "kind": "PodAutoscaler", "metadata": {"name": "web", "namespace": "ns"}, "spec": ` +
			tc.spec + `, "status": {"currentReplicas": 2}}`
		var pa PodAutoscaler
		if err := json.Unmarshal([]byte(raw), &pa); err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if pa.Name != "web" || pa.Status.CurrentReplicas != 2 || len(pa.Invalid) != 1 || !strings.HasPrefix(pa.Invalid[0], tc.want) {
			t.Errorf("%s: name %q, status %+v, invalid %q; want %q", tc.spec, pa.Name, pa.Status, pa.Invalid, tc.want)
		}
	}
	var pa PodAutoscaler
	if err := json.Unmarshal([]byte(`{"metadata": {"name": 5}}`), &pa); err == nil {
		t.Error("metadata that does not decode: no error")
	}
}
