package benchgen

import "testing"

// splitMix64 is the textbook sequential SplitMix64, to check that R(s,i,k)
// is output number key+1 of it.
type splitMix64 struct{ state uint64 }

func (s *splitMix64) next() uint64 {
	s.state += gamma
	return mix64(s.state)
}

func TestMix64(t *testing.T) {
	tests := []struct {
		in, want uint64
	}{
		{0, 0},
		{1, 6238072747940578789},
		{^uint64(0), 13029008266876403067},
		{gamma, 0xe220a8397b1dcdaf},              // first output of SplitMix64(0)
		{0x3c6ef372fe94f82a, 0x6e789e6aa1b965f4}, // 2*gamma, wrapped
	}
	for _, tt := range tests {
		if got := mix64(tt.in); got != tt.want {
			t.Errorf("mix64(%#x) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestRReferenceVectors checks R against the published first outputs of
// SplitMix64 seeded with 1234567 (keys 0, 1, 2 are stream 0, item 0).
func TestRReferenceVectors(t *testing.T) {
	g := rng{seed: 1234567}
	want := []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423}
	for k, w := range want {
		if got := g.r(0, 0, uint64(k)); got != w {
			t.Errorf("R(0,0,%d) seed 1234567 = %d, want %d", k, got, w)
		}
	}
}

func TestRIsSplitMix64Output(t *testing.T) {
	g := rng{seed: 42}
	seq := splitMix64{state: 42}
	for key := uint64(0); key < 1000; key++ {
		want := seq.next()
		if got := g.r(key>>48, (key>>8)&(1<<40-1), key&0xff); got != want {
			t.Fatalf("key %d: R = %d, want SplitMix64 output %d", key, got, want)
		}
	}
}

// TestRSeed42 pins R and U for seed 42 at the values behind the example
// lines of the spec (node-00000 util=13, run-00000-000 cpu=16 memMi=72
// rs-run-034, PG 000 cpu=3000 memMi=512 zone=zone-c).
func TestRSeed42(t *testing.T) {
	g := rng{seed: 42}
	tests := []struct {
		name    string
		s, k    uint64
		i       int
		r       uint64 // R(s,i,k)
		n, want int64  // U(s,i,k,n)
	}{
		{"node 0 is under-utilized", 1, 0, 0, 12887510192600720400, 100, 0},
		{"node 0 util 10+3", 1, 1, 0, 5335821781813837760, 31, 3},
		{"pod 0 cpu jitter 95+2", 2, 0, 0, 4419796306782634043, 11, 2},
		{"pod 0 mem jitter 95+7", 2, 1, 0, 15408884034902012849, 11, 7},
		{"pod 0 app 34", 2, 2, 0, 11223874622021719714, 64, 34},
		{"group 0 cpu 3000m", 3, 0, 0, 7645986634838958213, 5, 3},
		{"group 0 mem 512Mi", 3, 1, 0, 5827466208234667621, 6, 1},
		{"group 0 zone-c", 3, 2, 0, 16699395494039474435, 3, 2},
		{"last S3 pod app", 2, 2, 99999, 13314415581262779901, 64, 61},
		{"last S3 node draw", 1, 0, 4999, 7642994700546653775, 100, 75},
		{"last S3 group zone", 3, 2, 49, 11448660045823935639, 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.r(tt.s, uint64(tt.i), tt.k); got != tt.r {
				t.Errorf("R(%d,%d,%d) = %d, want %d", tt.s, tt.i, tt.k, got, tt.r)
			}
			if got := g.u(tt.s, tt.i, tt.k, tt.n); got != tt.want {
				t.Errorf("U(%d,%d,%d,%d) = %d, want %d", tt.s, tt.i, tt.k, tt.n, got, tt.want)
			}
		})
	}
}
