package simtest

import "sort"

// Item is one pod for the exact packing: its requests (in any units, the
// same as the node's), the zone it is pinned to (-1: any), its workload, and
// Anti, that workload again when its replicas may not share a node
// (hostname anti-affinity; -1: they may).
type Item struct {
	CPU, Mem   int64
	Zone, Anti int
	Workload   int
}

// bin is one new node of the exact packing.
type bin struct {
	cpu, mem int64
	zone     int
	anti     map[int]bool
}

// Optimum finds by branch and bound the fewest nodes of capacity cpu/mem
// (any zone, as many as needed) that hold items: the exact figure the
// scale-up's plans and the scheduler's placements are measured against. proven is false when the
// search gave up after budget steps; best is then only an upper bound.
func Optimum(items []Item, cpu, mem int64, budget int) (best int, proven bool) {
	items = append([]Item(nil), items...)
	size := func(it Item) float64 { return float64(it.CPU)/float64(cpu) + float64(it.Mem)/float64(mem) }
	// Constrained and large items first, replicas of a workload together.
	sort.SliceStable(items, func(i, j int) bool {
		if si, sj := size(items[i]), size(items[j]); si != sj {
			return si > sj
		}
		return items[i].Workload < items[j].Workload
	})
	var restCPU, restMem []int64 = make([]int64, len(items)+1), make([]int64, len(items)+1)
	for i := len(items) - 1; i >= 0; i-- {
		restCPU[i] = restCPU[i+1] + items[i].CPU
		restMem[i] = restMem[i+1] + items[i].Mem
	}
	s := &search{items: items, cpu: cpu, mem: mem, restCPU: restCPU, restMem: restMem, budget: budget,
		where: make([]int, len(items))}
	s.best = firstFit(items, cpu, mem) + 1
	s.dfs(0)
	return s.best, !s.gaveUp
}

type search struct {
	items            []Item
	cpu, mem         int64
	restCPU, restMem []int64
	bins             []bin
	where            []int
	best, steps      int
	budget           int
	gaveUp           bool
}

func (s *search) dfs(i int) {
	s.steps++
	if s.steps > s.budget {
		s.gaveUp = true
		return
	}
	if i == len(s.items) {
		if len(s.bins) < s.best {
			s.best = len(s.bins)
		}
		return
	}
	if len(s.bins)+s.lowerBound(i) >= s.best {
		return
	}
	it := s.items[i]
	first := 0
	if i > 0 && s.items[i-1].Workload == it.Workload {
		// Identical replicas go to bins in order: no permutation twice.
		first = s.where[i-1]
		if it.Anti >= 0 {
			first++
		}
	}
	seen := map[[4]int64]bool{}
	for b := first; b < len(s.bins); b++ {
		bn := &s.bins[b]
		if !s.fits(it, bn) {
			continue
		}
		key := [4]int64{bn.cpu, bn.mem, int64(bn.zone), int64(len(bn.anti))}
		if len(bn.anti) == 0 && seen[key] {
			continue
		}
		seen[key] = true
		s.put(i, b)
		s.dfs(i + 1)
		s.take(i, b)
		if s.gaveUp {
			return
		}
	}
	if len(s.bins)+1 < s.best {
		s.bins = append(s.bins, bin{zone: -1, anti: map[int]bool{}})
		s.put(i, len(s.bins)-1)
		s.dfs(i + 1)
		s.take(i, len(s.bins)-1)
		s.bins = s.bins[:len(s.bins)-1]
	}
}

func (s *search) fits(it Item, bn *bin) bool {
	if bn.cpu+it.CPU > s.cpu || bn.mem+it.Mem > s.mem {
		return false
	}
	if it.Zone >= 0 && bn.zone >= 0 && it.Zone != bn.zone {
		return false
	}
	return it.Anti < 0 || !bn.anti[it.Anti]
}

func (s *search) put(i, b int) {
	it, bn := s.items[i], &s.bins[b]
	bn.cpu += it.CPU
	bn.mem += it.Mem
	if it.Anti >= 0 {
		bn.anti[it.Anti] = true
	}
	s.where[i] = b
	if it.Zone >= 0 {
		bn.zone = it.Zone
	}
}

func (s *search) take(i, b int) {
	it, bn := s.items[i], &s.bins[b]
	bn.cpu -= it.CPU
	bn.mem -= it.Mem
	if it.Anti >= 0 {
		delete(bn.anti, it.Anti)
	}
	if it.Zone >= 0 && !s.pinnedBefore(b, i) {
		bn.zone = -1
	}
}

// pinnedBefore tells whether an item before i in bin b is pinned.
func (s *search) pinnedBefore(b, i int) bool {
	for j := 0; j < i; j++ {
		if s.where[j] == b && s.items[j].Zone >= 0 {
			return true
		}
	}
	return false
}

// lowerBound is how many more bins the items from i need at least, after
// the free room of the open bins.
func (s *search) lowerBound(i int) int {
	var freeCPU, freeMem int64
	for _, bn := range s.bins {
		freeCPU += s.cpu - bn.cpu
		freeMem += s.mem - bn.mem
	}
	need := func(rest, free, c int64) int {
		if rest <= free {
			return 0
		}
		return int((rest - free + c - 1) / c)
	}
	return max(need(s.restCPU[i], freeCPU, s.cpu), need(s.restMem[i], freeMem, s.mem))
}

// firstFit is an upper bound to start the search from.
func firstFit(items []Item, cpu, mem int64) int {
	var bins []bin
	for _, it := range items {
		placed := false
		for b := range bins {
			s := search{cpu: cpu, mem: mem}
			if s.fits(it, &bins[b]) {
				bins[b].cpu += it.CPU
				bins[b].mem += it.Mem
				if it.Anti >= 0 {
					bins[b].anti[it.Anti] = true
				}
				if it.Zone >= 0 {
					bins[b].zone = it.Zone
				}
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, bin{cpu: it.CPU, mem: it.Mem, zone: it.Zone, anti: map[int]bool{}})
			if it.Anti >= 0 {
				bins[len(bins)-1].anti[it.Anti] = true
			}
		}
	}
	return len(bins)
}
