package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
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
		}, func() { pods, slab = nil, nil })
	if err != nil {
		err = readErr("list", "pods", err)
	}
	col.add(func(s *snapshot.Snapshot) { s.Pods = pods })
	return err
}

// maxReadRounds bounds the rounds of targeted pod reads in one scan.
const maxReadRounds = 3

// readCandidates reads the full objects of the pods the checks declared that are not read yet:
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
		mu   sync.Mutex // keep and fail are called from every read
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
	allLimits := true
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err.Error())
		allLimits = allLimits && fault.Limit(err)
	}
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency * 2)
	for _, l := range lists {
		g.Go(func() error {
			ns := l.namespace
			if ns == "" {
				ns = col.namespace()
			}
			// A resourceVersion lets the apiserver answer from its cache. Pods no check asked for
			// are skipped undecoded.
			opts := metav1.ListOptions{LabelSelector: l.selector(col.opts.Scope.LabelSelector),
				ResourceVersion: col.podsRV, ResourceVersionMatch: resourceVersionMatch(col.podsRV)}
			// keep takes each pod once, so a page read again after a fault needs no skipping.
			err := col.streamPods(ctx, ns, opts, col.podPageSize, fullListAccept, func(body io.Reader, listMeta func(*metav1.ListMeta), _ int) (int, error) {
				return 0, decodePodPage(body, listMeta, want, keep)
			}, func() {})
			if err != nil {
				fail(readErr("list", "pods -l "+l.selector(""), err))
			}
			return nil // recorded: a failed read never stops the others
		})
	}
	for _, p := range gets {
		g.Go(func() error {
			got, err := get(ctx, col, func(ctx context.Context) (*corev1.Pod, error) {
				return col.c.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{ResourceVersion: col.podsRV})
			})
			switch {
			case apierrors.IsNotFound(err):
				// Deleted since the list: nothing left to diagnose.
			case err != nil:
				fail(readErr("get", "pods", err))
			case got.UID == p.UID:
				keep(got)
			}
			return nil
		})
	}
	_ = g.Wait()
	// Deterministic order whatever the reads' timing.
	sort.Slice(full, func(i, j int) bool { return full[i].UID < full[j].UID })
	col.add(func(s *snapshot.Snapshot) { s.FullPods = append(s.FullPods, full...) })
	if len(errs) > 0 {
		sort.Strings(errs)
		err := fmt.Errorf("read candidate pods: %s", summarize(uniq.Of(errs), 3))
		if allLimits {
			err = fault.LimitError(err.Error())
		}
		return len(cands), err
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
