package collect

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readErr turns an API error into the short reason the report shows. The error stays wrapped, so
// fault.Limit and fault.Transient still classify it.
func readErr(verb, what string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return &shortErr{msg: fmt.Sprintf("forbidden: %s %s", verb, what), err: err}
	case apierrors.IsNotFound(err):
		return &shortErr{msg: fmt.Sprintf("not found: %s %s", verb, what), err: err}
	}
	return fmt.Errorf("%s %s: %w", verb, what, err)
}

// shortErr shows msg for the error it wraps.
type shortErr struct {
	msg string
	err error
}

func (e *shortErr) Error() string { return e.msg }
func (e *shortErr) Unwrap() error { return e.err }

// resourceName is how a resource is named in the report: group/resource, or resource for the
// core group.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Group + "/" + gvr.Resource
}

// paginate calls page with the limit and continue token until the list is read whole. page adds
// a page's items only when it returns no error, so a page that failed transiently is asked for
// again with the same continue token; when the token has expired (410), the list starts over
// after reset forgets what was read.
func (col *collector) paginate(ctx context.Context, opts metav1.ListOptions, page func(context.Context, metav1.ListOptions) (string, error), reset func()) error {
	opts.Limit = col.opts.PageSize
	tries := col.retry.Start()
	restarts := 0
	for {
		cont, err := page(ctx, opts)
		switch {
		case err == nil && cont == "":
			return nil
		case err == nil:
			opts.Continue = cont
		case opts.Continue != "" && expired(err) && restarts < maxRestarts:
			restarts++
			reset()
			opts.Continue = ""
		case !tries.Again(ctx, err):
			return tries.Err(err)
		}
	}
}

// listAll reads a list whole with list (a typed client's List), page by page, and returns the
// items that items finds in each page, those read before an error included. An error is reported
// as a failure to list what.
func listAll[L interface{ GetContinue() string }, T any](ctx context.Context, col *collector, what string,
	list func(context.Context, metav1.ListOptions) (L, error), items func(L) []T) ([]*T, error) {
	var out []*T
	err := col.paginate(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := list(ctx, o)
		if err != nil {
			return "", readErr("list", what, err)
		}
		page := items(l)
		for i := range page {
			out = append(out, &page[i])
		}
		return l.GetContinue(), nil
	}, func() { out = nil })
	return out, err
}

// listUnstructured reads a resource of namespace ns ("" for all) whole through the dynamic client.
func (col *collector) listUnstructured(ctx context.Context, gvr schema.GroupVersionResource, ns string) ([]*unstructured.Unstructured, error) {
	return col.listSelected(ctx, gvr, ns, "")
}

// listSelected reads the objects of a resource of namespace ns that match a label selector.
func (col *collector) listSelected(ctx context.Context, gvr schema.GroupVersionResource, ns, selector string) ([]*unstructured.Unstructured, error) {
	list := col.c.Dynamic.Resource(gvr).Namespace(ns).List
	return listAll(ctx, col, resourceName(gvr), func(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
		o.LabelSelector = selector
		return list(ctx, o)
	}, func(l *unstructured.UnstructuredList) []unstructured.Unstructured { return l.Items })
}

// summarize joins the first max items and counts the others.
func summarize(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:max], ", "), len(items)-max)
}
