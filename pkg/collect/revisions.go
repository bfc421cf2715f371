package collect

import (
	"context"
	"errors"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readRevisions reads the ControllerRevisions due that are not read yet, one GET each, a bounded
// number at a time: metadata-only unless the data is asked for. The checks name a few per
// workload they are concerned with, so a GET each costs less than listing every revision in
// scope. A revision that is gone is left out; other failures are recorded. It returns how many
// it asked for.
func (col *collector) readRevisions(ctx context.Context, due []snapshot.RevisionRead) int {
	if col.revisionsAsked == nil {
		col.revisionsAsked = map[string]bool{}
	}
	var todo []snapshot.RevisionRead
	for _, r := range due {
		k := r.Namespace + "/" + r.Name
		if full, asked := col.revisionsAsked[k]; asked && (full || !r.Full) {
			continue
		}
		col.revisionsAsked[k] = r.Full
		todo = append(todo, r)
	}
	if len(todo) == 0 {
		return 0
	}
	// Each read fills its own slot, so the results need no lock and keep the order asked.
	read := make([]*appsv1.ControllerRevision, len(todo))
	errs := make([]string, len(todo))
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for i, r := range todo {
		g.Go(func() error {
			cr, err := get(ctx, col, func(ctx context.Context) (*appsv1.ControllerRevision, error) { return col.getRevision(ctx, r) })
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs[i] = readErr("get", "controllerrevisions "+r.Namespace+"/"+r.Name, err).Error()
			default:
				cr.ManagedFields = nil
				read[i] = cr
			}
			return nil // recorded below: a failed read never stops the others
		})
	}
	_ = g.Wait()
	col.add(func(s *snapshot.Snapshot) {
		for _, cr := range read {
			if cr == nil {
				continue
			}
			// A revision read in full replaces its metadata read earlier.
			s.Revisions = append(removeRevision(s.Revisions, cr.Namespace, cr.Name), cr)
		}
	})
	if errs = slices.DeleteFunc(errs, func(e string) bool { return e == "" }); len(errs) > 0 {
		col.unread(snapshot.InputControllerRevisions, errors.New(strings.Join(errs, "; ")))
	}
	return len(todo)
}

func (col *collector) getRevision(ctx context.Context, r snapshot.RevisionRead) (*appsv1.ControllerRevision, error) {
	if r.Full {
		return col.c.Kube.AppsV1().ControllerRevisions(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	}
	m, err := col.c.Metadata.Resource(appsv1.SchemeGroupVersion.WithResource("controllerrevisions")).Namespace(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return &appsv1.ControllerRevision{TypeMeta: m.TypeMeta, ObjectMeta: m.ObjectMeta}, nil
}

func removeRevision(in []*appsv1.ControllerRevision, namespace, name string) []*appsv1.ControllerRevision {
	out := in[:0]
	for _, cr := range in {
		if cr.Namespace != namespace || cr.Name != name {
			out = append(out, cr)
		}
	}
	return out
}
