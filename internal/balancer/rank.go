package balancer

// rankItem is one candidate's sort key inside a strategy: a lower key comes
// first, then a lower tie, then the lower name.
type rankItem struct {
	key float64 // primary key, ascending; never NaN
	tie uint64  // secondary key, ascending: input index or a random draw
	c   *Candidate
}

// before reports whether a sorts before b.
func (a *rankItem) before(b *rankItem) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.c.Name < b.c.Name
}

// selectTop is the top-K partial selection every scoring strategy shares
// (docs/reference.md#balancing): it rearranges items so that items[:k] holds
// the k best in order, best first, without sorting the rest. A max-heap of the
// k best seen so far (worst on top) is kept in items[:k] while the others
// stream past, then heap-sorted: O(n log k) comparisons, in place, no
// allocation. k = 1 is a linear scan; k ≥ n is a heap sort.
func selectTop(items []rankItem, k int) {
	k = min(k, len(items))
	if k <= 0 {
		return
	}
	h := items[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for j := k; j < len(items); j++ {
		if items[j].before(&h[0]) {
			h[0], items[j] = items[j], h[0]
			siftDown(h, 0)
		}
	}
	for end := k - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftDown(h[:end], 0)
	}
}

// siftDown restores the max-heap property (by before) below h[i].
func siftDown(h []rankItem, i int) {
	for {
		w := 2*i + 1
		if w >= len(h) {
			return
		}
		if r := w + 1; r < len(h) && h[w].before(&h[r]) {
			w = r
		}
		if !h[i].before(&h[w]) {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// ranker is the scratch space of a sorting strategy, reused between calls
// under the Balancer's mutex.
type ranker struct {
	items []rankItem
}

// reset returns n zeroed items.
func (r *ranker) reset(n int) []rankItem {
	r.items = resize(r.items, n)
	clear(r.items)
	return r.items
}

// take copies the first k items' candidates into out, clears the scratch so
// it retains no candidate pointer, and returns out[:k].
func (r *ranker) take(out []*Candidate, k int) []*Candidate {
	k = min(k, len(r.items))
	for i := range k {
		out[i] = r.items[i].c
	}
	clear(r.items)
	return out[:k]
}
