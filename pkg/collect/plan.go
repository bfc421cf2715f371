package collect

import (
	"container/heap"
	"maps"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cost model of candidate reads, in units of one GET of one pod. A LIST costs a request, a little
// per pod it returns, and a little per pod the apiserver's cache matches against the selector.
// Measured against kube-apiserver v1.37 on two cores (see bench/): a GET served from the cache
// takes about 1.1 ms at 16 in flight; a LIST takes about 0.15 ms per full pod it returns and, with
// a label selector, about 3 µs per cached pod it matches (0.3-0.4 s at 100k pods); the cache
// matches a namespace's pods only for a LIST in that namespace.
const (
	costListItem = 1.0 / 8
	costScanItem = 1.0 / 350
	// A selector LIST may return at most this many pods per candidate it covers, so a selector
	// never reads much more than the candidates it stands for.
	maxReturnedPerCandidate = 2
	// maxSelectorLists bounds the LISTs one scan uses for candidates.
	maxSelectorLists = 5000
)

// selectorRead is one LIST that reads candidates together: the pods of a namespace ("" for the
// scope) carrying the label key=value, or, with values, key in (values).
type selectorRead struct {
	namespace  string
	key, value string
	values     []string
	covers     int
	returns    int
}

func (r selectorRead) selector(scope string) string {
	sel := r.key + "=" + r.value
	if r.values != nil {
		sel = r.key + " in (" + strings.Join(r.values, ",") + ")"
	}
	if scope != "" {
		sel += "," + scope
	}
	return sel
}

// selectorOption is a label pair, in a namespace or the whole scope, that candidates carry.
type selectorOption struct {
	ns, k, v string
	members  []int // indexes of the candidates carrying it
	returns  int   // pods in scope that carry it (what the LIST returns)
	scanned  int   // pods the apiserver matches it against
	gain     float64
}

// gainOf is what reading the option's uncovered candidates with one LIST saves over GETs; it is
// not positive when the LIST would return too much for what it covers.
func (o *selectorOption) gainOf(covered []bool) float64 {
	n := 0
	for _, m := range o.members {
		if !covered[m] {
			n++
		}
	}
	if n < 2 || o.returns > maxReturnedPerCandidate*n {
		return 0
	}
	return float64(n) - 1 - costListItem*float64(o.returns) - costScanItem*float64(o.scanned)
}

type optionHeap []*selectorOption

func (h optionHeap) Len() int { return len(h) }
func (h optionHeap) Less(i, j int) bool {
	if h[i].gain != h[j].gain {
		return h[i].gain > h[j].gain
	}
	// Ties go to the narrower, then the lexically first selector, so a plan is stable.
	a, b := h[i], h[j]
	if a.ns != b.ns {
		return a.ns > b.ns
	}
	if a.k != b.k {
		return a.k < b.k
	}
	return a.v < b.v
}
func (h optionHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *optionHeap) Push(x any)   { *h = append(*h, x.(*selectorOption)) }
func (h *optionHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// planCandidateReads splits the candidates into LISTs by label selector and single GETs. The
// metadata snapshot holds every pod's labels, so the number of pods a selector returns is known
// before it is sent: a selector is used when it covers several candidates, returns few other pods,
// and costs less than the GETs it replaces. Options are picked greedily, best saving first (a
// lazy greedy: an option's saving only shrinks as others cover its candidates).
func planCandidateReads(all, cands []*metav1.ObjectMeta, scoped bool) (lists []selectorRead, gets []*metav1.ObjectMeta) {
	type pairKey struct{ ns, k, v string }
	options := map[pairKey]*selectorOption{}
	for i, p := range cands {
		for k, v := range p.Labels {
			if v == "" {
				continue
			}
			keys := []pairKey{{"", k, v}}
			if !scoped {
				keys = append(keys, pairKey{p.Namespace, k, v})
			}
			for _, pk := range keys {
				o := options[pk]
				if o == nil {
					o = &selectorOption{ns: pk.ns, k: k, v: v}
					options[pk] = o
				}
				o.members = append(o.members, i)
			}
		}
	}
	// Only pairs on two candidates or more can replace a GET; byKey indexes them for the count.
	byKey := map[string]map[string]bool{}
	for pk, o := range options {
		if len(o.members) < 2 {
			delete(options, pk)
			continue
		}
		if byKey[pk.k] == nil {
			byKey[pk.k] = map[string]bool{}
		}
		byKey[pk.k][pk.v] = true
	}
	if len(options) == 0 {
		return nil, cands
	}
	// One pass over every pod counts what each option returns and scans.
	nsPods := map[string]int{}
	for _, p := range all {
		nsPods[p.Namespace]++
		for k, vals := range byKey {
			v, ok := p.Labels[k]
			if !ok || !vals[v] {
				continue
			}
			if o := options[pairKey{"", k, v}]; o != nil {
				o.returns++
			}
			if o := options[pairKey{p.Namespace, k, v}]; o != nil && !scoped {
				o.returns++
			}
		}
	}
	covered := make([]bool, len(cands))
	h := make(optionHeap, 0, len(options))
	for _, o := range options {
		o.scanned = len(all)
		if o.ns != "" {
			o.scanned = nsPods[o.ns]
		}
		if o.gain = o.gainOf(covered); o.gain > 0 {
			h = append(h, o)
		}
	}
	heap.Init(&h)
	for h.Len() > 0 && len(lists) < maxSelectorLists {
		o := heap.Pop(&h).(*selectorOption)
		g := o.gainOf(covered)
		if g <= 0 {
			continue
		}
		if g < o.gain && h.Len() > 0 && g < h[0].gain {
			o.gain = g // others covered some of it since: compare again
			heap.Push(&h, o)
			continue
		}
		n := 0
		for _, m := range o.members {
			if !covered[m] {
				covered[m] = true
				n++
			}
		}
		lists = append(lists, selectorRead{namespace: o.ns, key: o.k, value: o.v, covers: n, returns: o.returns})
	}
	var rest []*metav1.ObjectMeta
	for i, p := range cands {
		if !covered[i] {
			rest = append(rest, p)
		}
	}
	sets, gets := planSetReads(all, rest)
	return append(lists, sets...), gets
}

// maxSetSelector bounds the length of one set-based selector, so its URL stays well within
// what apiservers and the proxies in front of them accept.
const maxSetSelector = 6000

// planSetReads reads candidates that no label pair groups through a label whose values are
// (nearly) unique per pod, such as a CloneSet's instance id or a StatefulSet pod's name: one LIST
// with the selector `key in (v1,...,vn)` reads them together. A key is used when its values
// return few other pods and one LIST costs less than the GETs it replaces; the best key first.
func planSetReads(all, cands []*metav1.ObjectMeta) (sets []selectorRead, gets []*metav1.ObjectMeta) {
	if len(cands) < 2 {
		return nil, cands
	}
	// Per key, the candidates carrying it and how many pods carry each of their values.
	members := map[string][]int{}
	counts := map[string]map[string]int{}
	for i, p := range cands {
		for k, v := range p.Labels {
			if v == "" {
				continue
			}
			members[k] = append(members[k], i)
			if counts[k] == nil {
				counts[k] = map[string]int{}
			}
			counts[k][v] = 0
		}
	}
	for _, p := range all {
		for k, v := range p.Labels {
			if c := counts[k]; c != nil {
				if n, ok := c[v]; ok {
					c[v] = n + 1
				}
			}
		}
	}
	keys := slices.Collect(maps.Keys(members))
	// Most candidates first; ties to the lexically first key, so a plan is stable.
	sort.Slice(keys, func(i, j int) bool {
		if len(members[keys[i]]) != len(members[keys[j]]) {
			return len(members[keys[i]]) > len(members[keys[j]])
		}
		return keys[i] < keys[j]
	})
	covered := make([]bool, len(cands))
	for _, k := range keys {
		var values []string
		seen := map[string]bool{}
		n, returns := 0, 0
		for _, m := range members[k] {
			if covered[m] {
				continue
			}
			n++
			if v := cands[m].Labels[k]; !seen[v] {
				seen[v] = true
				values = append(values, v)
				returns += counts[k][v]
			}
		}
		if n < 2 || returns > maxReturnedPerCandidate*n {
			continue
		}
		sort.Strings(values)
		chunks := chunkValues(k, values)
		gain := float64(n) - float64(len(chunks)) - costListItem*float64(returns) - costScanItem*float64(len(all)*len(chunks))
		if gain <= 0 {
			continue
		}
		for _, m := range members[k] {
			covered[m] = true
		}
		for _, c := range chunks {
			sets = append(sets, selectorRead{key: k, values: c, covers: len(c), returns: returns * len(c) / len(values)})
		}
	}
	for i, p := range cands {
		if !covered[i] {
			gets = append(gets, p)
		}
	}
	return sets, gets
}

// chunkValues splits the values of a set-based selector on key into selectors of at most
// maxSetSelector bytes.
func chunkValues(key string, values []string) [][]string {
	var (
		out  [][]string
		cur  []string
		size = len(key) + 6
	)
	for _, v := range values {
		if len(cur) > 0 && size+len(v)+1 > maxSetSelector {
			out = append(out, cur)
			cur, size = nil, len(key)+6
		}
		cur = append(cur, v)
		size += len(v) + 1
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
