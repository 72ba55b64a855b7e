package crd_test

import (
	"strings"
	"testing"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
)

// The CRD refuses every schedule duration and lead time tidal cannot hold
// or that is above its bound, with the message tidal's decoder gives an
// object stored before the CRD did; tidal decodes the list of such an
// object beside a good one, and names the field on it.
func TestScheduleDurationsBoundedAsTidalDecodes(t *testing.T) {
	adm := newAdmission(t)
	good := goodPA(t)
	pattern := "should match '" + v1alpha1.DurationPattern + "'"
	for _, tc := range []struct{ duration, lead, field, want string }{
		{"99999999999h", "1h", "spec.schedules[0].duration", pattern},
		{"1h", "2562048h", "spec.schedules[0].leadTime", pattern},
		{"2562048h", "1h", "spec.schedules[0].duration", pattern},
		{"1h", "100000000000000000000ns", "spec.schedules[0].leadTime", "may not be more than 20 bytes"},
		{"8784h0.5s", "1h", "spec.schedules[0].duration", "must be at most 8784h (366 days)"},
		{"1h", "745h", "spec.schedules[0].leadTime", "must be at most 744h (31 days)"},
		{"999999h999999h99999h", "1h", "spec.schedules[0].duration", "must be at most 8784h (366 days)"},
		{"8784h", "744h", "", ""},
		{"527040m", "0s", "", ""},
		{"1.5h", "90m", "", ""},
	} {
		obj, err := object(paYAML(tc.duration, tc.lead, "80", ""))
		if err != nil {
			t.Fatal(err)
		}
		apiErrs := adm.admit(obj)
		pa := decodeList(t, obj, good)
		if tc.want == "" {
			if len(apiErrs) > 0 || len(pa.Invalid) > 0 {
				t.Errorf("duration %q lead %q: the API server says %v, tidal %v; want both to admit it", tc.duration, tc.lead, apiErrs, pa.Invalid)
			}
			continue
		}
		found := false
		for _, e := range apiErrs {
			found = found || (e.Field == tc.field && strings.Contains(e.Error(), tc.want))
		}
		if !found {
			t.Errorf("duration %q lead %q: the API server says %v, want %s at %s", tc.duration, tc.lead, apiErrs, tc.want, tc.field)
		}
		if len(pa.Invalid) != 1 || !strings.HasPrefix(pa.Invalid[0], tc.field+": ") || !strings.Contains(pa.Invalid[0], tc.want) {
			t.Errorf("duration %q lead %q: tidal leaves unread %q, want %s at %s", tc.duration, tc.lead, pa.Invalid, tc.want, tc.field)
		}
	}
}
