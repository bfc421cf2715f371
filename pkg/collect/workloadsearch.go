package collect

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const (
	// tableAccept asks for a list as the server-side Table `kubectl get -o wide` prints. Tables
	// are served as JSON only.
	tableAccept = "application/json;as=Table;g=meta.k8s.io;v=v1"
	// tablePageSize is larger than a list's page: a row is a few hundred bytes, and the
	// apiserver compresses only answers above 128 KiB.
	tablePageSize = 5000
	// maxSearchRounds bounds how often the checks are asked again after their searches' matches
	// were read: a verdict that found a workload may search for another.
	maxSearchRounds = 3
	// maxNamedLists bounds the lists of one name each that read a search's matches; past it the
	// workloads are listed whole.
	maxNamedLists = 16
)

// readAskedWorkloads reads, for a one-namespace scope, the workloads of other namespaces the
// checks search for (Snapshot.AskedWorkloads): those of a namespace by listing it, those named
// like something, with a container so named or running an image of a repository by reading
// every workload as a Table (name, containers, images: enough to match, a small part of the
// objects) and then listing only the matching names in full. Asked again until they search for
// nothing new; when a Table cannot be read (a bundle that never recorded one, a server that
// does not serve it), or too much matches, the workloads are listed whole.
func (col *collector) readAskedWorkloads(ctx context.Context) {
	for round := 0; ; round++ {
		qs := col.opts.AsksWorkloads(col.snap)
		if len(qs) == 0 {
			return
		}
		if round == maxSearchRounds || !col.readWorkloadMatches(ctx, qs) {
			col.widenControllers(ctx)
			col.snap.Index()
			return
		}
		col.snap.Index()
	}
}

// workloadKind reads one kind of apps workload: a namespace's, as a Table of every namespace's,
// or those of a name in every namespace.
type workloadKind struct {
	resource string
	// list lists the kind in namespace ns ("" for all) whose fields match selector.
	list func(ctx context.Context, ns, selector string) error
}

// readWorkloadMatches reads the matches of qs into the snapshot; false when they could not be
// told apart from the others and every workload must be listed.
func (col *collector) readWorkloadMatches(ctx context.Context, qs []snapshot.WorkloadQuery) bool {
	found, ok := col.matchWorkloads(ctx, qs)
	if !ok {
		return false
	}
	col.add(func(s *snapshot.Snapshot) {
		s.Deployments = appendNew(s.Deployments, found.deps)
		s.StatefulSets = appendNew(s.StatefulSets, found.sets)
		s.DaemonSets = appendNew(s.DaemonSets, found.daemons)
		s.HoldWorkloads(qs...)
	})
	return true
}

// workloads are Deployments, StatefulSets and DaemonSets read together.
type workloads struct {
	deps    []*appsv1.Deployment
	sets    []*appsv1.StatefulSet
	daemons []*appsv1.DaemonSet
}

// matchWorkloads reads the workloads of every namespace that match qs: a namespace's listed
// whole, the others found in Tables and listed by name. ok is false when they could not be told
// apart from the others.
func (col *collector) matchWorkloads(ctx context.Context, qs []snapshot.WorkloadQuery) (found workloads, ok bool) {
	apps := col.c.Kube.AppsV1()
	kinds := []workloadKind{
		{"deployments", selectedLister(col, "deployments", apps.Deployments, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }, &found.deps)},
		{"statefulsets", selectedLister(col, "statefulsets", apps.StatefulSets, func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items }, &found.sets)},
		{"daemonsets", selectedLister(col, "daemonsets", apps.DaemonSets, func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items }, &found.daemons)},
	}
	var searches []snapshot.WorkloadQuery
	for _, q := range qs {
		if q.Namespace == "" {
			searches = append(searches, q)
			continue
		}
		for _, k := range kinds {
			if err := k.list(ctx, q.Namespace, ""); err != nil {
				return workloads{}, false // the lists of every namespace say what failed
			}
		}
	}
	if len(searches) == 0 {
		return found, true
	}
	named := map[string][]string{} // resource -> names of the matching rows
	total := 0
	for _, k := range kinds {
		t, err := col.workloadTable(ctx, k.resource)
		if err != nil {
			return workloads{}, false
		}
		if named[k.resource], err = tableMatches(t, searches); err != nil {
			return workloads{}, false
		}
		total += len(named[k.resource])
	}
	if total > maxNamedLists {
		return workloads{}, false
	}
	for _, k := range kinds {
		for _, name := range named[k.resource] {
			if err := k.list(ctx, "", fields.OneTermEqualSelector("metadata.name", name).String()); err != nil {
				return workloads{}, false
			}
		}
	}
	return found, true
}

// appendNew appends the objects of add not already in held, by namespace and name, and sorts
// them as a cluster-wide list is (by namespace, then name), so that "the first" found of several
// is the one a whole list would give.
func appendNew[T any, P interface {
	*T
	metav1.Object
}](held, add []P) []P {
	for _, o := range add {
		if !slices.ContainsFunc(held, func(h P) bool { return h.GetNamespace() == o.GetNamespace() && h.GetName() == o.GetName() }) {
			held = append(held, o)
		}
	}
	slices.SortStableFunc(held, func(a, b P) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return held
}

// selectedLister lists one kind of workload of a namespace ("" for all) whose fields match a
// selector ("" for every one) into a slice.
func selectedLister[L interface{ GetContinue() string }, T any, C interface {
	List(context.Context, metav1.ListOptions) (L, error)
}](col *collector, resource string, client func(ns string) C, items func(L) []T, into *[]*T) func(context.Context, string, string) error {
	return func(ctx context.Context, ns, selector string) error {
		what := "apps/" + resource + " " + where(ns)
		if selector != "" {
			what = "apps/" + resource + " " + selector + " " + where(ns)
		}
		got, err := listAll(ctx, col, what, func(ctx context.Context, o metav1.ListOptions) (L, error) {
			o.FieldSelector = selector
			return client(ns).List(ctx, o)
		}, items)
		*into = append(*into, got...)
		return err
	}
}

// workloadTable reads every namespace's workloads of an apps resource as a Table without
// objects, page by page.
func (col *collector) workloadTable(ctx context.Context, resource string) (*metav1.Table, error) {
	what := "apps/" + resource + " as a table in all namespaces"
	all := &metav1.Table{}
	err := col.paginate(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		o.Limit = tablePageSize
		raw, err := col.c.Kube.AppsV1().RESTClient().Get().Resource(resource).
			VersionedParams(&o, scheme.ParameterCodec).Param("includeObject", string(metav1.IncludeNone)).
			SetHeader("Accept", tableAccept).Do(ctx).Raw()
		if err != nil {
			return "", readErr("list", what, err)
		}
		var page metav1.Table
		if err := json.Unmarshal(raw, &page); err != nil {
			return "", fmt.Errorf("list %s: %w", what, err)
		}
		if page.Kind != "Table" {
			return "", fmt.Errorf("list %s: the answer is a %q, not a Table", what, page.Kind)
		}
		if all.ColumnDefinitions == nil {
			all.ColumnDefinitions = page.ColumnDefinitions
		}
		all.Rows = append(all.Rows, page.Rows...)
		return page.Continue, nil
	}, func() { all.Rows = nil })
	if err != nil {
		return nil, err
	}
	return all, nil
}

// tableMatches returns the names of a workload Table's rows that match any of qs (none with a
// Namespace): by the Name column, the Containers column (the template's container names, comma
// separated) and the Images column (their images, in the same order).
func tableMatches(t *metav1.Table, qs []snapshot.WorkloadQuery) ([]string, error) {
	col := map[string]int{}
	for i, c := range t.ColumnDefinitions {
		col[strings.ToLower(c.Name)] = i
	}
	for _, name := range []string{"name", "containers", "images"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("the table has no %s column", name)
		}
	}
	cell := func(r metav1.TableRow, name string) (string, bool) {
		i := col[name]
		if i >= len(r.Cells) {
			return "", false
		}
		s, ok := r.Cells[i].(string)
		return s, ok
	}
	var out []string
	for _, r := range t.Rows {
		name, ok1 := cell(r, "name")
		containers, ok2 := cell(r, "containers")
		images, ok3 := cell(r, "images")
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("a row of the table has no name, containers or images: %v", r.Cells)
		}
		if slices.ContainsFunc(qs, func(q snapshot.WorkloadQuery) bool {
			return rowMatches(q, name, strings.Split(containers, ","), strings.Split(images, ","))
		}) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

func rowMatches(q snapshot.WorkloadQuery, name string, containers, images []string) bool {
	switch {
	case q.Name != "":
		return name == q.Name
	case q.Container != "":
		return slices.Contains(containers, q.Container)
	case q.ImageRepository != "":
		return slices.ContainsFunc(images, func(img string) bool { return knowledge.ImageRepository(img) == q.ImageRepository })
	}
	return false
}
