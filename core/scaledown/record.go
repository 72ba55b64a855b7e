package scaledown

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// EvictionMemory is how long a drain's eviction is remembered at most: the
// pods a scale-down moved are held (Input.Evicted) for at most this long
// after their eviction.
const EvictionMemory = time.Hour

// maxClockSkew is how far ahead of this machine's clock another machine's
// may be.
const maxClockSkew = time.Minute

// storedEviction is an Eviction as the status ConfigMap keeps it.
type storedEviction struct {
	Controller types.UID `json:"controller"`
	At         time.Time `json:"at"`
}

// EncodeEvictions is the evictions as the status ConfigMap keeps them (a
// JSON list), so a restarted tidal still holds the nodes of the pods the
// scale-down under way moved.
func EncodeEvictions(evictions []Eviction) string {
	out := make([]storedEviction, len(evictions))
	for i, e := range evictions {
		out[i] = storedEviction{Controller: e.Controller, At: e.At.UTC()}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		// A list of strings and times always encodes.
		panic(fmt.Sprintf("encode evictions: %v", err))
	}
	return string(raw)
}

// DecodeEvictions reads what EncodeEvictions wrote, keeping the evictions
// of the last EvictionMemory before now. An entry without a controller or
// time, or later than now (by more than maxClockSkew: the tidal that
// wrote it may have run on another machine), is left out and named in the errors; text that
// is no such list is one error and no eviction.
func DecodeEvictions(raw string, now time.Time) ([]Eviction, []error) {
	var stored []storedEviction
	if err := json.Unmarshal([]byte(raw), &stored); err != nil {
		return nil, []error{fmt.Errorf("not a list of evictions: %w", err)}
	}
	var out []Eviction
	var errs []error
	for i, s := range stored {
		switch {
		case s.Controller == "":
			errs = append(errs, fmt.Errorf("eviction %d: no controller", i))
		case s.At.IsZero():
			errs = append(errs, fmt.Errorf("eviction %d (controller %s): no time", i, s.Controller))
		case s.At.After(now.Add(maxClockSkew)):
			errs = append(errs, fmt.Errorf("eviction %d (controller %s): at %s, later than now", i, s.Controller, s.At.Format(time.RFC3339)))
		case now.Sub(s.At) <= EvictionMemory:
			out = append(out, Eviction(s))
		}
	}
	return out, errs
}
