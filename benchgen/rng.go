package benchgen

// gamma is the SplitMix64 increment (the golden ratio in 64-bit fixed point).
const gamma uint64 = 0x9e3779b97f4a7c15

// RNG streams, the s argument of R.
const (
	streamNodeUtil uint64 = 1
	streamRunning  uint64 = 2
	streamPending  uint64 = 3
)

// mix64 is the SplitMix64 output function (all arithmetic wraps).
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// rng is the counter-based generator of the spec: value number key+1 of
// SplitMix64(seed), where key packs the stream, the item and a sub-index.
type rng struct {
	seed uint64
}

// r returns R(s,i,k) = mix64(seed + gamma*(((s<<48)|(i<<8)|k)+1)).
func (g rng) r(s, i, k uint64) uint64 {
	key := (s << 48) | (i << 8) | k
	return mix64(g.seed + gamma*(key+1))
}

// u returns U(s,i,k,n) = R(s,i,k) mod n as an int64; n must be positive.
func (g rng) u(s uint64, i int, k uint64, n int64) int64 {
	return int64(g.r(s, uint64(i), k) % uint64(n))
}
