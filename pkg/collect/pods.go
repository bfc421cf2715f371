package collect

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

var podTypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}

// readPods lists every pod in scope metadata-only, page by page. Each page is turned into pods as
// it arrives and dropped, so no raw page outlives its decoding. Of a pod's metadata only what the
// checks read from bulk pods is kept: managedFields, most of a pod's metadata, are dropped (the
// candidates are read again in full, with them), and strings repeated across pods are shared.
func (col *collector) readPods(ctx context.Context) error {
	ns := col.namespace()
	opts := metav1.ListOptions{LabelSelector: col.opts.Scope.LabelSelector}
	var pods []*corev1.Pod
	in := newInterner()
	err := col.paginate(ctx, opts, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := col.c.Metadata.Resource(podsGVR).Namespace(ns).List(ctx, o)
		if err != nil {
			return "", readErr("list", "pods", err)
		}
		if o.Continue == "" {
			// Every page of a list is read at the first page's resourceVersion.
			col.podsRV = l.ResourceVersion
			if n := l.RemainingItemCount; n != nil && *n > 0 && *n < 1<<24 {
				pods = make([]*corev1.Pod, 0, len(l.Items)+int(*n))
			}
		}
		// One allocation per page rather than one per pod.
		page := make([]corev1.Pod, len(l.Items))
		for i := range l.Items {
			p := &page[i]
			p.TypeMeta = podTypeMeta
			p.ObjectMeta = l.Items[i].ObjectMeta
			p.ManagedFields = nil
			in.meta(&p.ObjectMeta)
			pods = append(pods, p)
		}
		return l.Continue, nil
	})
	col.add(func(s *snapshot.Snapshot) { s.Pods = pods })
	return err
}

// Cost model of candidate reads, in units of one GET of one pod. A LIST costs a request, a little
// per pod it returns, and a little per pod the apiserver's cache scans to match the selector.
// Measured on kube-apiserver v1.37 (see bench/): a GET costs about as much server and client time
// as returning 20 pods in a LIST, or as matching a label selector against 5,000 cached pods.
const (
	costListItem = 1.0 / 20
	costScanItem = 1.0 / 5000
	// A selector LIST may return at most this many pods per candidate it covers, so a selector
	// never reads much more than the candidates it stands for.
	maxReturnedPerCandidate = 2
	// maxSelectorLists bounds the LISTs one scan uses for candidates.
	maxSelectorLists = 32
)

// selectorRead is one LIST that reads candidates together: the pods of a namespace ("" for the
// scope) carrying the label key=value.
type selectorRead struct {
	namespace  string
	key, value string
	covers     int
	returns    int
}

func (r selectorRead) selector(scope string) string {
	sel := r.key + "=" + r.value
	if scope != "" {
		sel += "," + scope
	}
	return sel
}

// planCandidateReads splits the candidates into LISTs by label selector and single GETs. The
// metadata snapshot holds every pod's labels, so the number of pods a selector returns is known
// before it is sent: a selector is used when it covers several candidates, returns few other pods,
// and costs less than the GETs it replaces.
func planCandidateReads(all, cands []*corev1.Pod, scoped bool) (lists []selectorRead, gets []*corev1.Pod) {
	type pairKey struct{ ns, k, v string }
	remaining := make(map[types.UID]*corev1.Pod, len(cands))
	for _, p := range cands {
		remaining[p.UID] = p
	}
	nsOf := func(p *corev1.Pod) []string {
		if scoped {
			return []string{""}
		}
		return []string{"", p.Namespace}
	}
	// Pairs on at least two candidates are the only ones that can replace a GET.
	onCands := map[pairKey]int{}
	for _, p := range cands {
		for k, v := range p.Labels {
			if v == "" {
				continue
			}
			for _, ns := range nsOf(p) {
				onCands[pairKey{ns, k, v}]++
			}
		}
	}
	// byKey[k][v] is the set of namespaces ("" included) where the pair is of interest.
	byKey := map[string]map[string]bool{}
	for pk, n := range onCands {
		if n < 2 {
			continue
		}
		if byKey[pk.k] == nil {
			byKey[pk.k] = map[string]bool{}
		}
		byKey[pk.k][pk.v] = true
	}
	if len(byKey) == 0 {
		return nil, cands
	}
	// One pass over every pod counts what each pair of interest returns and scans.
	returns := map[pairKey]int{}
	nsPods := map[string]int{}
	for _, p := range all {
		nsPods[p.Namespace]++
		for k, vals := range byKey {
			v, ok := p.Labels[k]
			if !ok || !vals[v] {
				continue
			}
			returns[pairKey{"", k, v}]++
			if !scoped {
				returns[pairKey{p.Namespace, k, v}]++
			}
		}
	}
	for len(lists) < maxSelectorLists && len(remaining) > 1 {
		covers := map[pairKey]int{}
		for _, p := range remaining {
			for k, v := range p.Labels {
				if byKey[k][v] {
					for _, ns := range nsOf(p) {
						covers[pairKey{ns, k, v}]++
					}
				}
			}
		}
		best, bestGain := pairKey{}, 0.0
		for pk, n := range covers {
			ret := returns[pk]
			if n < 2 || ret > maxReturnedPerCandidate*n {
				continue
			}
			scanned := len(all)
			if pk.ns != "" {
				scanned = nsPods[pk.ns]
			}
			gain := float64(n) - 1 - costListItem*float64(ret) - costScanItem*float64(scanned)
			// Ties go to the narrower, then the lexically first selector, so a plan is stable.
			if gain > bestGain || (gain == bestGain && gain > 0 && lessPair(pk.ns, pk.k, pk.v, best.ns, best.k, best.v)) {
				best, bestGain = pk, gain
			}
		}
		if bestGain <= 0 {
			break
		}
		lists = append(lists, selectorRead{namespace: best.ns, key: best.k, value: best.v, covers: covers[best], returns: returns[best]})
		for uid, p := range remaining {
			if p.Labels[best.k] == best.v && (best.ns == "" || p.Namespace == best.ns) {
				delete(remaining, uid)
			}
		}
	}
	for _, p := range cands {
		if _, ok := remaining[p.UID]; ok {
			gets = append(gets, p)
		}
	}
	return lists, gets
}

func lessPair(ns1, k1, v1, ns2, k2, v2 string) bool {
	if ns1 != ns2 {
		return ns1 > ns2 // a namespace before the whole scope
	}
	if k1 != k2 {
		return k1 < k2
	}
	return v1 < v2
}

// readCandidates reads the full objects of the pods the checks asked for: by the selector LISTs
// planCandidateReads chose, and the rest one GET each, a bounded number at a time. Both are served
// from the apiserver's cache at the pod list's resourceVersion or newer.
func (col *collector) readCandidates(ctx context.Context, uids []types.UID) error {
	want := map[types.UID]bool{}
	var cands []*corev1.Pod
	for _, uid := range uids {
		if p, full := col.snap.Pod(uid); p != nil && !full && !want[uid] {
			want[uid] = true
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	lists, gets := planCandidateReads(col.snap.Pods, cands, col.namespace() != "")
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, col.opts.Concurrency*2)
		mu    sync.Mutex
		full  []*corev1.Pod
		errs  []string
		nGets int
	)
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
			got, err := col.c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
				LabelSelector: l.selector(col.opts.Scope.LabelSelector),
				// Unpaginated: the plan bounds what it returns, and a resourceVersion lets the
				// apiserver answer from its cache.
				ResourceVersion: col.podsRV, ResourceVersionMatch: resourceVersionMatch(col.podsRV),
			})
			if err != nil {
				fail(readErr("list", "pods -l "+l.key+"="+l.value, err))
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for i := range got.Items {
				if p := &got.Items[i]; want[p.UID] {
					full = append(full, p)
				}
			}
		})
	}
	for _, p := range gets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			got, err := col.c.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{ResourceVersion: col.podsRV})
			mu.Lock()
			defer mu.Unlock()
			nGets++
			switch {
			case apierrors.IsNotFound(err):
				// Deleted since the list: nothing left to diagnose.
			case err != nil:
				errs = append(errs, readErr("get", "pods", err).Error())
			case got.UID == p.UID:
				full = append(full, got)
			}
		})
	}
	wg.Wait()
	// Deterministic order whatever the reads' timing.
	sort.Slice(full, func(i, j int) bool { return full[i].UID < full[j].UID })
	col.add(func(s *snapshot.Snapshot) { s.FullPods = append(s.FullPods, full...) })
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("read candidate pods: %s", summarize(uniq(errs), 3))
	}
	return nil
}

// resourceVersionMatch is NotOlderThan when a resourceVersion is given: any state at least as new
// as the pod list, which the apiserver serves from its watch cache.
func resourceVersionMatch(rv string) metav1.ResourceVersionMatch {
	if rv == "" {
		return ""
	}
	return metav1.ResourceVersionMatchNotOlderThan
}

// interner shares the strings that repeat across many objects' metadata: a metadata-only list
// decodes every occurrence of a namespace, label or owner into its own allocation. Values unique
// to one object (names, UIDs, annotation values) are left alone, so the table stays small.
type interner struct{ m map[string]string }

func newInterner() *interner { return &interner{m: map[string]string{}} }

func (in *interner) str(s string) string {
	if v, ok := in.m[s]; ok {
		return v
	}
	in.m[s] = s
	return s
}

func (in *interner) meta(m *metav1.ObjectMeta) {
	m.Namespace = in.str(m.Namespace)
	m.GenerateName = in.str(m.GenerateName)
	if len(m.Labels) > 0 {
		labels := make(map[string]string, len(m.Labels))
		for k, v := range m.Labels {
			labels[in.str(k)] = in.str(v)
		}
		m.Labels = labels
	}
	if len(m.Annotations) > 0 {
		annotations := make(map[string]string, len(m.Annotations))
		for k, v := range m.Annotations {
			annotations[in.str(k)] = v
		}
		m.Annotations = annotations
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = in.str(r.APIVersion), in.str(r.Kind), in.str(r.Name)
		r.UID = types.UID(in.str(string(r.UID)))
	}
	for i, f := range m.Finalizers {
		m.Finalizers[i] = in.str(f)
	}
}
