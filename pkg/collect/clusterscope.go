package collect

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readsCluster says whether the scope reads the objects of the cluster-scoped resource gr: a
// scan of every namespace reads them all, a one-namespace scope only those Scope.ClusterResources
// names (`why` on a cluster-scoped object).
func (col *collector) readsCluster(gr schema.GroupResource) bool {
	return col.namespace() == "" || slices.Contains(col.opts.Scope.ClusterResources, gr)
}

// eventNamespaces are the namespaces whose events are listed: the scope's, and default too when a
// one-namespace scope reads cluster-scoped objects, since the events about those are recorded
// there (client-go tools/record/event.go, makeEvent: an object without a namespace gets its
// events in default); from default only the events about cluster-scoped objects are kept (keepEvent).
func (col *collector) eventNamespaces() []string {
	ns := col.namespace()
	if ns == "" || ns == metav1.NamespaceDefault || len(col.opts.Scope.ClusterResources) == 0 {
		return []string{ns}
	}
	return []string{ns, metav1.NamespaceDefault}
}

// keepEvent says whether an event listed in namespace ns belongs to the scope: any of the scope's
// namespace, only those about cluster-scoped objects from the default namespace read besides it.
func (col *collector) keepEvent(ns, involvedNamespace string) bool {
	return ns == col.namespace() || involvedNamespace == ""
}

// listNamespace is the namespace a resource is listed in: the scope's for a namespaced one, none
// for a cluster-scoped one (which a one-namespace scope lists only when it names it).
func listNamespace(ns string, namespaced bool) string {
	if !namespaced {
		return ""
	}
	return ns
}
