package terminating

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const (
	finLBCleanup   = "service.kubernetes.io/load-balancer-cleanup"
	finJobTracking = "batch.kubernetes.io/job-tracking"
)

// lbFailureReasons are the service controller's Warning events about a load balancer it could
// not sync or delete.
var lbFailureReasons = map[string]bool{"DeletingLoadBalancerFailed": true, "SyncLoadBalancerFailed": true}

// loadBalancerCleanup says whether any service controller ever acted on a Service held by the
// load-balancer cleanup finalizer: its class, its load balancer status, its Warning events. The
// owner is a controller outside what the scan sees (a cloud provider), so no write is offered.
func (a *pass) loadBalancerCleanup(t *target) (checks.Draft, bool) {
	subj := t.subject
	if subj.kind != "Service" || subj.group != "" || !slices.Contains(subj.meta.GetFinalizers(), finLBCleanup) {
		return checks.Draft{}, false
	}
	var svc *corev1.Service
	for _, s := range a.s.DeletedServices {
		if s.UID == subj.meta.GetUID() {
			svc = s
		}
	}
	if svc == nil {
		return checks.Draft{}, false
	}
	age := checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	var ingress []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ingress = append(ingress, in.IP+in.Hostname)
	}
	var failed []string
	for _, e := range a.s.EventsFor("Service", svc.Namespace, svc.Name, svc.UID) {
		if e.Type == corev1.EventTypeWarning && lbFailureReasons[e.Reason] {
			failed = append(failed, e.Reason)
		}
	}
	ev := []string{fmt.Sprintf("spec.type %s, status.loadBalancer.ingress [%s]", svc.Spec.Type, strings.Join(ingress, ", "))}
	owner := "the service controller of the cloud-controller-manager"
	if c := svc.Spec.LoadBalancerClass; c != nil && *c != "" {
		owner = "the load balancer controller of class " + *c
		ev = append(ev, "spec.loadBalancerClass "+*c+": that controller, not the cloud provider's, owns the load balancer")
	}
	ev = append(ev, a.warningEvents("Service", svc, 3)...)
	d := checks.Draft{RootCause: RootCauseFinalizerOwnerNotActing, Evidence: ev}
	switch {
	case len(failed) > 0:
		d.Summary = fmt.Sprintf("%s for %s: %s fails to delete the load balancer (%s)", subj.noun, age, owner, strings.Join(uniq.Of(failed), ", "))
		d.Message = fmt.Sprintf("Finalizer %s waits for %s to delete the cloud load balancer, and it reports failing: its "+
			"Warning events say why (credentials, quota, a resource the load balancer still uses). Fix that and the Service "+
			"goes; removing the finalizer would leave the load balancer behind, still billed.", finLBCleanup, owner)
	case len(ingress) == 0 && len(ev) == 1:
		d.Summary = fmt.Sprintf("%s for %s: no service controller ever acted on this Service", subj.noun, age)
		d.Message = fmt.Sprintf("Finalizer %s waits for %s, but nothing shows it ever acted on this Service: no load balancer "+
			"in status, no class, no Warning event. The cluster may run no cloud-controller-manager (then no load balancer "+
			"was created and removing the finalizer leaks nothing), or events have expired: check your cloud account before "+
			"removing it.", finLBCleanup, owner)
	default:
		d.Summary = fmt.Sprintf("%s for %s: %s has not deleted the load balancer", subj.noun, age, owner)
		d.Message = fmt.Sprintf("Finalizer %s waits for %s to delete the load balancer it created; it has not, and records no "+
			"failure. Its logs say why; removing the finalizer would leave the load balancer behind.", finLBCleanup, owner)
	}
	return d, true
}

// jobTracking explains a pod held by the Job controller's tracking finalizer: the controller
// removes it once it has counted the pod, and from pods whose Job is gone.
func (a *pass) jobTracking(t *target) (checks.Draft, bool) {
	p, owners := t.pod, t.owners
	if !slices.Contains(p.Finalizers, finJobTracking) || len(p.Finalizers) != 1 {
		return checks.Draft{}, false // another finalizer is judged on its own
	}
	job := "no Job owns it"
	if ref := snapshot.ControllerOf(p); ref != nil && ref.Kind == "Job" {
		job = "Job " + p.Namespace + "/" + ref.Name
		if o, ok := a.objectByUID(string(ref.UID)); ok {
			job += ", " + objectState(o.Meta)
		}
	}
	age := checks.Age(a.now, p.DeletionTimestamp.Time)
	return checks.Draft{
		RootCause: RootCauseFinalizerOwnerNotActing,
		Summary:   fmt.Sprintf("Terminating for %s: the Job controller has not released the pod (%s)", age, job),
		Message: fmt.Sprintf("Finalizer %s is the Job controller's (kube-controller-manager): it removes it once it has counted "+
			"the pod in the Job's status, and from pods whose Job is gone. It has not, for %s: the Job controller is not "+
			"running or cannot update the Job (its events and kube-controller-manager's log say why). Removing the finalizer "+
			"by hand makes the Job miscount this pod.", finJobTracking, age),
		Evidence: append([]string{"phase " + string(p.Status.Phase) + ", owner: " + job, owners.get()[0].line()}, a.warningEvents("Pod", p, 3)...),
	}, true
}

// volumeDetach explains a VolumeAttachment held by its CSI driver's external-attacher: the
// attacher removes its finalizer once the volume is detached, and records why not in
// status.detachError.
func (a *pass) volumeDetach(t *target) (checks.Draft, bool) {
	subj := t.subject
	if subj.kind != "VolumeAttachment" || subj.group != "storage.k8s.io" {
		return checks.Draft{}, false
	}
	var fin string
	for _, f := range subj.meta.GetFinalizers() {
		if strings.HasPrefix(f, "external-attacher/") {
			fin = f
		}
	}
	if fin == "" {
		return checks.Draft{}, false
	}
	var va *storagev1.VolumeAttachment
	for _, v := range a.s.DeletedAttachments {
		if v.UID == subj.meta.GetUID() {
			va = v
		}
	}
	if va == nil {
		return checks.Draft{}, false
	}
	pv := "an inline volume"
	if va.Spec.Source.PersistentVolumeName != nil {
		pv = "PersistentVolume " + *va.Spec.Source.PersistentVolumeName
	}
	node := "node " + va.Spec.NodeName
	if n, ok := a.s.Node(va.Spec.NodeName); a.s.NodeAbsent(va.Spec.NodeName) {
		node += " (no longer exists)"
	} else if c := readyCondition(n); ok && c != nil {
		node += " (Ready=" + string(c.Status) + ")"
	}
	age := checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	ev := []string{fmt.Sprintf("attacher %s, %s on %s, status.attached %t", va.Spec.Attacher, pv, node, va.Status.Attached)}
	d := checks.Draft{RootCause: RootCauseFinalizerOwnerNotActing}
	if e := va.Status.DetachError; e != nil {
		ev = append(ev, fmt.Sprintf("status.detachError (%s ago): %s", checks.Age(a.now, e.Time.Time), oneLine(e.Message, 300)))
		d.Summary = fmt.Sprintf("%s for %s: %s cannot detach the volume: %s", subj.noun, age, va.Spec.Attacher, oneLine(e.Message, 80))
	} else {
		d.Summary = fmt.Sprintf("%s for %s: %s has not detached the volume and records no error", subj.noun, age, va.Spec.Attacher)
	}
	d.Message = fmt.Sprintf("Finalizer %s is the CSI driver %s's external-attacher: it removes it once the storage backend "+
		"reports the volume detached from %s. Its detach error (if any) and its logs say why it has not; if the attacher "+
		"does not run, nothing will. Removing the finalizer by hand may leave the volume attached to that node, and a "+
		"new pod elsewhere may fail to attach it or corrupt it.", fin, va.Spec.Attacher, node)
	d.Evidence = append(ev, a.warningEvents("VolumeAttachment", va, 3)...)
	return d, true
}
