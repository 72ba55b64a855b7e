package scaleup

// MaxAttempts bounds how often one iteration decides again after a group
// refused to grow, each time without that group.
const MaxAttempts = 3

// Result is what carrying out one scale-up gave: the group grew by Delta,
// or, when Refused is set, it refused (Refused is why, as the pods it
// could have helped are told).
type Result struct {
	Group   string
	Delta   int
	Refused string
}

// Retry is the groups the next decision starts from after a plan was
// carried out with results (the grown groups' targets raised, those that
// refused marked unavailable), and whether to decide again: when a group
// refused and attempt (counted from 0) was not the last, the next decision
// grows the next-best group in the same iteration.
func Retry(groups []Group, results []Result, attempt int) (next []Group, again bool) {
	next = append([]Group(nil), groups...)
	refused := false
	for _, r := range results {
		for i := range next {
			if next[i].ID != r.Group {
				continue
			}
			if r.Refused != "" {
				next[i].Unavailable = r.Refused
			} else {
				next[i].Target += r.Delta
				next[i].Upcoming += r.Delta
			}
		}
		refused = refused || r.Refused != ""
	}
	return next, refused && attempt+1 < MaxAttempts
}
