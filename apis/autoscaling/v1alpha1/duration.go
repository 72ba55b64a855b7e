package v1alpha1

import (
	"fmt"
	"reflect"
	"regexp"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// How a duration of the API may be written. A Go duration holds at most
// about 2562047h; a longer one ("99999999999h") passes a pattern of digits
// and units, but Go's parser refuses it, and before tidal checked durations
// one such schedule made every list of PodAutoscalers fail to decode. The
// CRD refuses durations longer than MaxDurationLength characters or with an
// integer part of more than 6 digits: such a string holds at most
// 2×999999h + 99999h, so it always parses, and a rule compares it with the
// field's bound (the struct tag maxDuration, in the CRD's rule). A decoded
// duration that does not parse or is above its bound is left out and
// reported (UnmarshalChecked), with the message the CRD gives.
const (
	MaxDurationLength = 20
	DurationPattern   = `^([0-9]{1,6}([.][0-9]+)?(ns|us|ms|s|m|h))+$`
)

var durationRE = regexp.MustCompile(DurationPattern)

// originDuration marks the errors of durations among those
// UnmarshalChecked returns.
const originDuration = "duration"

// durationType is the type of a duration field.
var durationType = reflect.TypeFor[metav1.Duration]()

// CheckDuration reports what is wrong with s as a duration of the API
// whose bound is max (0: only that it parses), as the API server reports
// it for the CRD; nil when tidal can hold it. It accepts any duration Go
// parses within [0, max], also one the CRD's pattern would refuse (an
// object stored before the CRD bounded its durations).
func CheckDuration(path *field.Path, s string, max time.Duration) *field.Error {
	d, err := time.ParseDuration(s)
	switch {
	case err == nil && d >= 0 && (max == 0 || d <= max):
		return nil
	case utf8.RuneCountInString(s) > MaxDurationLength: // as the API server counts
		return field.TooLong(path, "", MaxDurationLength)
	case !durationRE.MatchString(s):
		return field.Invalid(path, s, "should match '"+DurationPattern+"'")
	case max != 0:
		return field.Invalid(path, s, MaxDurationMessage(max))
	}
	return field.Invalid(path, s, err.Error()) // not reached: the pattern and length hold what Go parses
}

// MaxDurationMessage is the message of a duration above max, the same in
// the CRD's rule.
func MaxDurationMessage(max time.Duration) string {
	return fmt.Sprintf("must be at most %s (%s)", formatHours(max), days(max))
}

// formatHours writes a whole number of hours as "8784h".
func formatHours(d time.Duration) string { return fmt.Sprintf("%dh", int64(d/time.Hour)) }

func days(d time.Duration) string { return fmt.Sprintf("%d days", int64(d/(24*time.Hour))) }

// durationBound is the bound of a duration field from its struct tag
// maxDuration (0 when it has none).
func durationBound(f reflect.StructField) time.Duration {
	d, err := time.ParseDuration(f.Tag.Get("maxDuration"))
	if err != nil {
		return 0
	}
	return d
}

// checkDuration checks v, the JSON of the duration field f: the error and
// whether v is refused, for its container to drop.
func checkDuration(path *field.Path, f reflect.StructField, v any) (field.ErrorList, bool) {
	s, ok := v.(string)
	if !ok {
		return field.ErrorList{field.Invalid(path, v, "must be a string such as \"1h30m\"").WithOrigin(originDuration)}, true
	}
	if err := CheckDuration(path, s, durationBound(f)); err != nil {
		return field.ErrorList{err.WithOrigin(originDuration)}, true
	}
	return nil, false
}
