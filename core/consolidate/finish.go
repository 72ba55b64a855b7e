package consolidate

import "time"

// Finishing is a replacement that settled: its saving is done once its old
// nodes are gone.
type Finishing struct {
	Kind   string
	Old    []string
	Saving float64
	// Settled is when the replacement settled.
	Settled time.Time
}

// Finished sorts the settled replacements fs by what became of their old
// nodes (present tells whether a node still exists): done once every old
// node is gone; kept when one still exists after timeout (its removal
// failed: the saving was not made); the others are left to wait.
func Finished(fs []Finishing, present func(string) bool, now time.Time, timeout time.Duration) (left, done, kept []Finishing) {
	for _, f := range fs {
		stays := false
		for _, n := range f.Old {
			stays = stays || present(n)
		}
		switch {
		case !stays:
			done = append(done, f)
		case !now.Before(f.Settled.Add(timeout)):
			kept = append(kept, f)
		default:
			left = append(left, f)
		}
	}
	return left, done, kept
}
