package collect

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readPods lists every pod in scope metadata-only (see streamPodMeta: one streamed response or
// pipelined pages, decoded item by item as they arrive, managedFields skipped). Of a pod's
// metadata only what the checks read from bulk pods is kept: managedFields, most of a pod's
// metadata, are not (the candidates are read again in full, with them), and what repeats across
// pods is shared.
func (col *collector) readPods(ctx context.Context) error {
	var (
		pods []*metav1.ObjectMeta
		slab []metav1.ObjectMeta // allocated a slab at a time rather than one by one
		in   = newInterner()
	)
	err := col.streamPodMeta(ctx, col.namespace(), metav1.ListOptions{LabelSelector: col.opts.Scope.LabelSelector}, col.podPageSize,
		func(l *metav1.ListMeta) {
			// Every page of a list is read at the first page's resourceVersion.
			col.podsRV = l.ResourceVersion
			if n := l.RemainingItemCount; n != nil && *n > 0 && *n < 1<<24 {
				pods = make([]*metav1.ObjectMeta, 0, col.podPageSize+*n)
			}
		},
		func(m *metav1.ObjectMeta) {
			if len(slab) == 0 {
				slab = make([]metav1.ObjectMeta, 256)
			}
			p := &slab[0]
			slab = slab[1:]
			*p = *m
			in.meta(p)
			pods = append(pods, p)
		})
	if err != nil {
		err = readErr("list", "pods", err)
	}
	col.add(func(s *snapshot.Snapshot) { s.Pods = pods })
	return err
}

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

// metadataFields keeps, of a managedFields field set, only the metadata fields: what the checks
// read of a pod's managedFields (who set a label or a finalizer). The spec and status field sets
// are most of a full pod's metadata, and unique to each pod (its IPs are keys in them).
func metadataFields(raw []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return raw
	}
	md, ok := top["f:metadata"]
	if !ok {
		return []byte("{}")
	}
	out, err := json.Marshal(map[string]json.RawMessage{"f:metadata": md})
	if err != nil {
		return raw
	}
	return out
}

// maxCandidateRounds bounds how often the checks are asked for candidates in one scan.
const maxCandidateRounds = 3

// readCandidates reads the full objects of the pods the checks asked for that are not read yet:
// by the selector LISTs planCandidateReads chose, and the rest one GET each, a bounded number at a
// time. Both are served from the apiserver's cache at the pod list's resourceVersion or newer. It
// returns how many pods it asked for.
func (col *collector) readCandidates(ctx context.Context, uids []types.UID) (int, error) {
	want := map[types.UID]bool{}
	var cands []*metav1.ObjectMeta
	if col.asked == nil {
		col.asked = map[types.UID]bool{}
	}
	for _, uid := range uids {
		if p, full := col.snap.Pod(uid); p != nil && !full && !col.asked[uid] {
			want[uid], col.asked[uid] = true, true
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return 0, nil
	}
	lists, gets := planCandidateReads(col.snap.Pods, cands, col.namespace() != "")
	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, col.opts.Concurrency*2)
		mu   sync.Mutex
		full []*corev1.Pod
		seen = map[types.UID]bool{}
		errs []string
		in   = newInterner()
	)
	keep := func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		if seen[p.UID] { // a LIST also returns candidates another read covers
			return
		}
		seen[p.UID] = true
		for i := range p.ManagedFields {
			if f := p.ManagedFields[i].FieldsV1; f != nil {
				f.Raw = metadataFields(f.Raw)
			}
		}
		in.managedFields(&p.ObjectMeta)
		full = append(full, p)
	}
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err.Error())
	}
	for _, l := range lists {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ns := l.namespace
			if ns == "" {
				ns = col.namespace()
			}
			// A resourceVersion lets the apiserver answer from its cache. Pods no check asked for
			// are skipped undecoded.
			opts := metav1.ListOptions{LabelSelector: l.selector(col.opts.Scope.LabelSelector),
				ResourceVersion: col.podsRV, ResourceVersionMatch: resourceVersionMatch(col.podsRV)}
			err := col.streamPods(ctx, ns, opts, col.podPageSize, fullListAccept, func(body io.Reader, listMeta func(*metav1.ListMeta)) error {
				return decodePodPage(body, listMeta, want, keep)
			})
			if err != nil {
				fail(readErr("list", "pods -l "+l.selector(""), err))
			}
		})
	}
	for _, p := range gets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			got, err := col.c.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{ResourceVersion: col.podsRV})
			switch {
			case apierrors.IsNotFound(err):
				// Deleted since the list: nothing left to diagnose.
			case err != nil:
				fail(readErr("get", "pods", err))
			case got.UID == p.UID:
				keep(got)
			}
		})
	}
	wg.Wait()
	// Deterministic order whatever the reads' timing.
	sort.Slice(full, func(i, j int) bool { return full[i].UID < full[j].UID })
	col.add(func(s *snapshot.Snapshot) { s.FullPods = append(s.FullPods, full...) })
	if len(errs) > 0 {
		sort.Strings(errs)
		return len(cands), fmt.Errorf("read candidate pods: %s", summarize(uniq(errs), 3))
	}
	return len(cands), nil
}

// resourceVersionMatch is NotOlderThan when a resourceVersion is given: any state at least as new
// as the pod list, which the apiserver serves from its watch cache.
func resourceVersionMatch(rv string) metav1.ResourceVersionMatch {
	if rv == "" {
		return ""
	}
	return metav1.ResourceVersionMatchNotOlderThan
}

// interner shares what repeats across many pods' metadata: a metadata-only list decodes every
// occurrence of a namespace, label or owner into its own allocation. Identical label sets (the pods
// of one ReplicaSet) share one map and identical owner references one slice; other strings that
// repeat (namespaces, label and annotation keys, owners) are shared one by one. Values unique to
// one pod (names, UIDs, annotation values) are left alone, so the tables stay small. The snapshot is
// read-only, so sharing is invisible to the checks.
type interner struct {
	strs   map[string]string
	labels map[uint64][]map[string]string
	owners map[types.UID][][]metav1.OwnerReference
	fields map[uint64][][]byte
	seed   maphash.Seed
}

func newInterner() *interner {
	return &interner{strs: map[string]string{}, labels: map[uint64][]map[string]string{}, owners: map[types.UID][][]metav1.OwnerReference{},
		fields: map[uint64][][]byte{}, seed: maphash.MakeSeed()}
}

// managedFields shares the field sets of managedFields entries: the pods of one workload have
// the same ones, written by the same managers, and they are most of a full pod's metadata.
func (in *interner) managedFields(m *metav1.ObjectMeta) {
	for i := range m.ManagedFields {
		e := &m.ManagedFields[i]
		e.Manager, e.APIVersion, e.FieldsType, e.Subresource = in.str(e.Manager), in.str(e.APIVersion), in.str(e.FieldsType), in.str(e.Subresource)
		if e.FieldsV1 == nil || len(e.FieldsV1.Raw) == 0 {
			continue
		}
		raw := e.FieldsV1.Raw
		h := maphash.Bytes(in.seed, raw)
		shared := false
		for _, cand := range in.fields[h] {
			if bytes.Equal(cand, raw) {
				e.FieldsV1 = &metav1.FieldsV1{Raw: cand}
				shared = true
				break
			}
		}
		if !shared {
			in.fields[h] = append(in.fields[h], raw)
		}
	}
}

func (in *interner) str(s string) string {
	if v, ok := in.strs[s]; ok {
		return v
	}
	in.strs[s] = s
	return s
}

func (in *interner) meta(m *metav1.ObjectMeta) {
	m.Namespace = in.str(m.Namespace)
	m.GenerateName = in.str(m.GenerateName)
	m.Labels = in.labelSet(m.Labels)
	if len(m.Annotations) > 0 {
		annotations := make(map[string]string, len(m.Annotations))
		for k, v := range m.Annotations {
			annotations[in.str(k)] = v
		}
		m.Annotations = annotations
	}
	m.OwnerReferences = in.ownerRefs(m.OwnerReferences)
	for i, f := range m.Finalizers {
		m.Finalizers[i] = in.str(f)
	}
}

// labelSet returns a shared map equal to labels. The hash is order-independent, so no sorting.
func (in *interner) labelSet(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return labels
	}
	var h uint64
	for k, v := range labels {
		h += hashPair(k, v)
	}
	for _, cand := range in.labels[h] {
		if maps.Equal(cand, labels) {
			return cand
		}
	}
	shared := make(map[string]string, len(labels))
	for k, v := range labels {
		shared[in.str(k)] = in.str(v)
	}
	in.labels[h] = append(in.labels[h], shared)
	return shared
}

// hashPair is FNV-1a of key, a separator and value, mixed so that sums of pairs rarely collide.
func hashPair(k, v string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(k); i++ {
		h = (h ^ uint64(k[i])) * prime
	}
	h = (h ^ 0xff) * prime
	for i := 0; i < len(v); i++ {
		h = (h ^ uint64(v[i])) * prime
	}
	return h ^ (h >> 31)
}

// ownerRefs returns a shared slice equal to refs, keyed by the first owner's UID.
func (in *interner) ownerRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	uid := refs[0].UID
	for _, cand := range in.owners[uid] {
		if slices.EqualFunc(cand, refs, ownerRefEqual) {
			return cand
		}
	}
	shared := slices.Clone(refs)
	for i := range shared {
		r := &shared[i]
		r.APIVersion, r.Kind, r.Name = in.str(r.APIVersion), in.str(r.Kind), in.str(r.Name)
		r.UID = types.UID(in.str(string(r.UID)))
	}
	in.owners[uid] = append(in.owners[uid], shared)
	return shared
}

func ownerRefEqual(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name &&
		boolPtrEqual(a.Controller, b.Controller) && boolPtrEqual(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

func boolPtrEqual(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
