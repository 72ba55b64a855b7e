package hpa

import (
	"math"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Watermark arithmetic is exact, on nano-units in big integers: a quantity
// the API accepts can lie far outside the int64 range of milli-units (10P
// is 1e19m, 1e100 is valid), and a metric value times a replica count
// overflows int64 too.

// maxNanoDigits bounds the nano-units quantityNanos returns: 1e36 exceeds
// 100 times any int64 milli-value and any int32 count times one, in
// nano-units, so no watermark decision changes beyond it.
const maxNanoDigits = 36

// nanosPerMilli is the number of nano-units in a milli-unit.
const nanosPerMilli = 1_000_000

// milliNanos returns v milli-units in nano-units.
func milliNanos(v int64) *big.Int {
	return new(big.Int).Mul(big.NewInt(v), big.NewInt(nanosPerMilli))
}

// quantityNanos returns q in nano-units, rounded up to a whole nano-unit as
// the quantity parser rounds, capped at 10^maxNanoDigits, and at least 1:
// callers pass positive quantities (see Watermarks.Validate). The work is
// bounded whatever q's exponent.
func quantityNanos(q resource.Quantity) *big.Int {
	if m := q.MilliValue(); m > 0 && q.Cmp(*resource.NewMilliQuantity(m, resource.DecimalSI)) == 0 {
		return milliNanos(m) // a whole number of milli-units, as nearly always
	}
	d := q.AsDec() // q is a copy: AsDec may change the representation it is called on
	abs := new(big.Int).Abs(d.UnscaledBig())
	if d.UnscaledBig().Sign() <= 0 {
		return big.NewInt(1)
	}
	shift := 9 - int64(d.Scale()) // nanos = abs * 10^shift
	digits := int64(abs.BitLen()-1) * 30103 / 100000
	switch {
	case digits+shift >= maxNanoDigits:
		return pow10(maxNanoDigits)
	case shift >= 0:
		abs.Mul(abs, pow10(shift))
	case -shift > digits+1:
		return big.NewInt(1) // below one nano-unit
	default:
		abs = ceilDiv(abs, pow10(-shift))
	}
	if abs.Cmp(pow10(maxNanoDigits)) > 0 {
		return pow10(maxNanoDigits)
	}
	return abs
}

// pow10 returns 10^n for 0 <= n.
func pow10(n int64) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
}

// ceilDiv returns ceil(n/d) for d > 0.
func ceilDiv(n, d *big.Int) *big.Int {
	q := new(big.Int).Neg(n)
	q.Div(q, d) // Euclidean division: floor for d > 0
	return q.Neg(q)
}

// floorDiv returns floor(n/d) for d > 0.
func floorDiv(n, d *big.Int) *big.Int {
	return new(big.Int).Div(n, d)
}

// product returns the product of the factors.
func product(factors ...*big.Int) *big.Int {
	p := big.NewInt(1)
	for _, f := range factors {
		p.Mul(p, f)
	}
	return p
}

// clampReplicas converts a count to int32 within [0, MaxInt32].
func clampReplicas(v int64) int32 {
	switch {
	case v < 0:
		return 0
	case v > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(v)
}

// clampBigReplicas converts a count to int32 within [0, MaxInt32].
func clampBigReplicas(v *big.Int) int32 {
	switch {
	case v.Sign() < 0:
		return 0
	case !v.IsInt64():
		return math.MaxInt32
	}
	return clampReplicas(v.Int64())
}
