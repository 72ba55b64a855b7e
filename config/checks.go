package config

import (
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The checks every flag goes through. Each returns nil or an error naming
// the flag and the value, and what a good value looks like.

func positive(flag string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s=%v must be positive", flag, d)
	}
	return nil
}

func nonNegative(flag string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s=%v must not be negative", flag, d)
	}
	return nil
}

// between accepts lo <= v <= hi; NaN and infinities are refused.
func between(flag string, v, lo, hi float64) error {
	if math.IsNaN(v) || v < lo || v > hi {
		return fmt.Errorf("%s=%v must be a number between %v and %v", flag, v, lo, hi)
	}
	return nil
}

// atLeast accepts v >= lo.
func atLeast(flag string, v, lo int) error {
	if v < lo {
		if lo == 0 {
			return fmt.Errorf("%s=%d must not be negative", flag, v)
		}
		return fmt.Errorf("%s=%d must be at least %d", flag, v, lo)
	}
	return nil
}

// int32Range accepts what fits an int32, the type the value ends up in.
func int32Range(flag string, v int) error {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return fmt.Errorf("%s=%d is out of range: want a value from %d to %d", flag, v, math.MinInt32, math.MaxInt32)
	}
	return nil
}

// objectName accepts what the API server accepts as the name of the object
// kind: a DNS label (namespaces) or a DNS subdomain (ConfigMaps, Leases).
func objectName(flag, value, kind string, label bool) error {
	if value == "" {
		return fmt.Errorf("%s must not be empty: it names the %s", flag, kind)
	}
	var msgs []string
	if label {
		msgs = validation.IsDNS1123Label(value)
	} else {
		msgs = validation.IsDNS1123Subdomain(value)
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s=%q is not a valid %s name: %s", flag, value, kind, strings.Join(msgs, "; "))
	}
	return nil
}
