package terminating

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// check is the stuck-terminating check. For every object whose deletion is overdue it
// names who is supposed to finish the deletion (the kubelet, kwok, a finalizer's controller, the
// namespace controller) and why that one has not.
type check struct{ checks.Documented }

// New returns the stuck-terminating check.
func New() checks.Check {
	return check{checks.Describe(checks.Info{
		ID:         ID,
		Threshold:  5 * time.Minute,
		RootCauses: rootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationLifecycleTime}},
			{Input: snapshot.InputNodes, Optional: true},
			{Input: snapshot.InputNodeLeases, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputNamespaces, Optional: true},
			{Input: snapshot.InputAPIServices, Optional: true},
			{Input: snapshot.InputObjects, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputClusterAPI, Optional: true},
			{Input: snapshot.InputClusterAPILogs, Optional: true},
			{Input: snapshot.InputKruiseWorkloads, Optional: true},
			{Input: snapshot.InputPersistentVolumes, Optional: true},
			{Input: snapshot.InputDeletedServices, Optional: true},
			{Input: snapshot.InputDeletedAttachments, Optional: true},
			{Input: snapshot.InputAdmission, Optional: true},
			{Input: snapshot.InputLeaderLeases, Optional: true},
		},
	}, documentation)}
}

// DeclareReads declares the pods whose full objects the check reads: those being deleted, those
// OpenKruise is preparing to delete (both visible in metadata), and every pod of a namespace
// where a claim waits for kubernetes.io/pvc-protection (which pods use a claim is in their spec).
// Whether it searches every namespace's workloads for a controller is known only once it judges
// (workloads: Snapshot.AskWorkloads).
func (check) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	claims := map[string]bool{}
	for _, o := range s.Objects {
		if o.Meta != nil && o.Resource.Group == "" && o.Resource.Resource == "persistentvolumeclaims" &&
			slices.Contains(o.Meta.Finalizers, finPVCProtection) {
			claims[o.Meta.Namespace] = true
		}
	}
	var out []types.UID
	for _, p := range s.Pods {
		if p.DeletionTimestamp != nil || p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete || claims[p.Namespace] {
			out = append(out, p.UID)
		}
	}
	return snapshot.Reads{Pods: []snapshot.PodReads{{UIDs: out}}, Nodes: []snapshot.NodeReads{{From: snapshot.NodesOfPods}}}
}

// ownInput says whether the objects input holds o only as a copy: pods and namespaces are read
// through their own inputs.
func ownInput(o snapshot.Object) bool {
	return o.Resource.Group == "" && (o.Resource.Resource == "pods" || o.Resource.Resource == "namespaces")
}

// Run reports every overdue deletion with its most specific root cause.
func (c check) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	a := &pass{s: s, info: c.Info(), now: s.Now, threshold: threshold}
	var out []report.Finding
	for _, p := range a.pods() {
		if f, ok := a.pod(p); ok {
			out = append(out, f)
		}
	}
	for _, o := range s.Objects {
		if ownInput(o) {
			continue
		}
		if f, ok := a.object(o); ok {
			out = append(out, f)
		}
	}
	for _, ns := range s.Namespaces {
		if f, ok := a.namespace(ns); ok {
			out = append(out, f)
		}
	}
	return out
}
