package hpa

import (
	"math"
	"math/big"
)

// mul64 returns a*b and whether it fits in an int64.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return p, true
}

// cmpProducts returns the sign of a*b - c*d, computed exactly.
func cmpProducts(a, b, c, d int64) int {
	x, okx := mul64(a, b)
	y, oky := mul64(c, d)
	if okx && oky {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	bx := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	by := new(big.Int).Mul(big.NewInt(c), big.NewInt(d))
	return bx.Cmp(by)
}

// mulDivFloor returns floor(a*b/c) for c > 0, exactly, saturating at the
// int64 range.
func mulDivFloor(a, b, c int64) int64 {
	if p, ok := mul64(a, b); ok {
		q := p / c
		if p%c != 0 && p < 0 {
			q--
		}
		return q
	}
	q := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	q.Div(q, big.NewInt(c)) // Euclidean division: floor for c > 0
	return saturate64(q)
}

// mulDivCeil returns ceil(a*b/c) for c > 0, exactly, saturating at the
// int64 range.
func mulDivCeil(a, b, c int64) int64 {
	if p, ok := mul64(a, b); ok {
		q := p / c
		if p%c != 0 && p > 0 {
			q++
		}
		return q
	}
	n := new(big.Int).Mul(big.NewInt(a), big.NewInt(b))
	n.Add(n, big.NewInt(c-1)) // ceil(n/c) = floor((n+c-1)/c) for c > 0
	n.Div(n, big.NewInt(c))
	return saturate64(n)
}

// saturate64 converts x to int64, clamping to the int64 range.
func saturate64(x *big.Int) int64 {
	switch {
	case x.IsInt64():
		return x.Int64()
	case x.Sign() > 0:
		return math.MaxInt64
	}
	return math.MinInt64
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
