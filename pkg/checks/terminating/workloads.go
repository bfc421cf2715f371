package terminating

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// workload is a Deployment, StatefulSet or DaemonSet a controller may run as.
type workload struct {
	kind            string
	meta            metav1.Object
	want, available int32
	containers      []corev1.Container
}

func (w workload) status() string {
	return fmt.Sprintf("%s %s/%s: %d/%d available", w.kind, w.meta.GetNamespace(), w.meta.GetName(), w.available, w.want)
}

// workloads returns every workload the snapshot holds, built once per run, for a search of
// every namespace's for qs. A one-namespace scope holds the others' only when asked.
func (a *pass) workloads(qs ...snapshot.WorkloadQuery) []workload {
	a.s.AskWorkloads(qs...)
	if a.allWorkloads != nil {
		return a.allWorkloads
	}
	out := []workload{}
	for _, d := range a.s.Deployments {
		out = append(out, workload{knowledge.KindDeployment, d, replicas(d.Spec.Replicas), d.Status.AvailableReplicas, d.Spec.Template.Spec.Containers})
	}
	for _, s := range a.s.StatefulSets {
		out = append(out, workload{knowledge.KindStatefulSet, s, replicas(s.Spec.Replicas), s.Status.AvailableReplicas, s.Spec.Template.Spec.Containers})
	}
	for _, d := range a.s.DaemonSets {
		out = append(out, workload{knowledge.KindDaemonSet, d, d.Status.DesiredNumberScheduled, d.Status.NumberAvailable, d.Spec.Template.Spec.Containers})
	}
	a.allWorkloads = out
	return out
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// searched says where the check looked for controllers, and whether that was everywhere: only
// then does not finding a known controller show it is not installed. It follows a search
// (workloads), whose matches in every namespace the snapshot then holds.
func (a *pass) searched() (string, bool) {
	if err, unread := a.s.Unread[snapshot.InputControllers]; unread {
		return fmt.Sprintf("the workloads that could be read (%v)", err), false
	}
	if a.s.ControllerNamespaces != nil {
		if len(a.s.ControllerNamespaces) == 0 {
			return "no namespace (the cluster-wide lists were refused)", false
		}
		return "the Deployments, StatefulSets and DaemonSets of namespaces " + strings.Join(a.s.ControllerNamespaces, ", ") +
			" only (the cluster-wide lists were refused)", false
	}
	return "the Deployments, StatefulSets and DaemonSets of all namespaces", true
}

// tableWorkloads finds a known owner's workloads: at its default places, else by image among
// workloads of the kinds it runs as.
func (a *pass) tableWorkloads(row knowledge.FinalizerOwner) []workload {
	var out []workload
	kinds := map[string]bool{}
	var qs []snapshot.WorkloadQuery
	for _, place := range row.Workloads {
		qs = append(qs, snapshot.WorkloadQuery{Name: place.Name})
	}
	if row.ImageRepository != "" {
		qs = append(qs, snapshot.WorkloadQuery{ImageRepository: row.ImageRepository})
	}
	all := a.workloads(qs...)
	for _, w := range all {
		for _, place := range row.Workloads {
			kinds[place.Kind] = true
			if w.kind == place.Kind && w.meta.GetNamespace() == place.Namespace && w.meta.GetName() == place.Name {
				out = append(out, w)
			}
		}
	}
	if len(out) > 0 || row.ImageRepository == "" {
		return out
	}
	for _, w := range all {
		if len(kinds) > 0 && !kinds[w.kind] {
			continue
		}
		for _, c := range w.containers {
			if knowledge.ImageRepository(c.Image) == row.ImageRepository {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// tableDeployments is tableWorkloads for owners whose Deployment the check reads further (its
// args, its image's version).
func (a *pass) tableDeployments(row knowledge.FinalizerOwner) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, w := range a.tableWorkloads(row) {
		if d, ok := w.meta.(*appsv1.Deployment); ok {
			out = append(out, d)
		}
	}
	return out
}

// managerWorkloads returns the workloads a field manager may stand for: one named like it, or
// with a container named like it.
func (a *pass) managerWorkloads(mgrs []string) []workload {
	if len(mgrs) == 0 {
		return nil // nothing to search by: every namespace's workloads are not needed
	}
	var qs []snapshot.WorkloadQuery
	for _, mgr := range mgrs {
		qs = append(qs, snapshot.WorkloadQuery{Name: mgr}, snapshot.WorkloadQuery{Container: mgr})
	}
	var out []workload
	for _, w := range a.workloads(qs...) {
		for _, mgr := range mgrs {
			if w.meta.GetName() == mgr || hasContainer(w.containers, mgr) {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

func hasContainer(cs []corev1.Container, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

func deploymentStatus(d *appsv1.Deployment) string {
	return workload{knowledge.KindDeployment, d, replicas(d.Spec.Replicas), d.Status.AvailableReplicas, nil}.status()
}

// tableLocator says what of a known owner was not found.
func tableLocator(row knowledge.FinalizerOwner) string {
	var where []string
	for _, w := range row.Workloads {
		where = append(where, "no "+w.String())
	}
	if row.ImageRepository != "" {
		kind := "workload"
		if len(row.Workloads) > 0 {
			kind = row.Workloads[0].Kind
		}
		where = append(where, "no "+kind+" running image "+row.ImageRepository)
	}
	return strings.Join(where, ", ")
}
