package simulator

// journalCap bounds the changes a snapshot remembers outside forks: a
// state older than that is computed afresh (see BaseCheck).
const journalCap = 4096

// journal is the snapshot's changes outside any fork since version start,
// in order: entries[i] made version start+i+1. A change it cannot replay
// (Touch: a node object changed in place) empties it and moves start.
type journal struct {
	start   uint64
	entries []undoEntry
}

// record appends the change that made version v.
func (j *journal) record(e undoEntry, v uint64) {
	if len(j.entries) >= journalCap {
		half := len(j.entries) / 2
		j.entries = append(j.entries[:0:0], j.entries[half:]...)
		j.start += uint64(half)
	}
	j.entries = append(j.entries, e)
	if j.start+uint64(len(j.entries)) != v {
		j.reset(v)
	}
}

// reset forgets every change up to version v.
func (j *journal) reset(v uint64) {
	j.start, j.entries = v, nil
}

// since returns the changes after version v, or false when they are not
// all remembered.
func (j *journal) since(v uint64) ([]undoEntry, bool) {
	if v < j.start || v > j.start+uint64(len(j.entries)) {
		return nil, false
	}
	return j.entries[v-j.start:], true
}

// changesSince returns the changes outside forks after version v, then
// those of the open forks, in order; false when the former are not all
// remembered.
func (s *Snapshot) changesSince(v uint64) (base, forked []undoEntry, ok bool) {
	base, ok = s.journal.since(v)
	return base, s.undo, ok
}
