package terminating

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// usesClaim says whether a pod holds a claim as the PVC protection controller counts it: a pod
// that is not Succeeded or Failed and names the claim in a volume, directly or as the ephemeral
// volume's claim <pod>-<volume>. Pods being deleted still count.
func usesClaim(p *corev1.Pod, claim string) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
		if v.Ephemeral != nil && p.Name+"-"+v.Name == claim {
			return true
		}
	}
	return false
}

// claimInUse: a claim held by kubernetes.io/pvc-protection while pods still use it. The pods of
// the claim's namespace are declared reads (DeclareReads), read in full.
func (a *pass) claimInUse(subj subject) (checks.Draft, []blocker, bool) {
	ns, claim := subj.meta.GetNamespace(), subj.meta.GetName()
	var users []blocker
	for _, p := range a.s.FullPods {
		if p.Namespace == ns && usesClaim(p, claim) {
			users = append(users, a.podBlocker(&p.ObjectMeta))
		}
	}
	if len(users) == 0 {
		return checks.Draft{}, nil, false // the controller can finish: whatever else holds it is judged next
	}
	age := checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	ev := append(blockerLines("used by", users),
		"finalizer "+finPVCProtection+": removed by the PVC protection controller (kube-controller-manager) once no pod that is "+
			"not Succeeded or Failed references the claim, Terminating pods included")
	return checks.Draft{
		RootCause: RootCauseProtectedResourceInUse,
		Summary:   fmt.Sprintf("%s for %s: claim still used by %s", subj.noun, age, blockerList(users)),
		Message: fmt.Sprintf("The claim was deleted while %d pod(s) still use it, so the PVC protection controller keeps "+
			"finalizer %s until they are gone: the claim is protected, not stuck. Stop what uses it (scale its workload "+
			"down, or delete the pods) and the claim goes on its own; removing the finalizer would pull the storage from "+
			"under a pod that may still write to it.", len(users), finPVCProtection),
		Evidence: ev,
	}, users, true
}

// volumeBound: a volume held by kubernetes.io/pv-protection while it is still bound to a claim.
func (a *pass) volumeBound(subj subject) (checks.Draft, []blocker, bool) {
	var pv *corev1.PersistentVolume
	for _, v := range a.s.PersistentVolumes {
		if v.UID == subj.meta.GetUID() {
			pv = v
		}
	}
	if pv == nil || pv.Status.Phase != corev1.VolumeBound || pv.Spec.ClaimRef == nil {
		return checks.Draft{}, nil, false
	}
	cr := pv.Spec.ClaimRef
	b := blocker{ref: report.ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: cr.Namespace, Name: cr.Name, UID: string(cr.UID)},
		state: "not being deleted (or not in scope)"}
	if o, ok := a.objectByUID(string(cr.UID)); ok {
		b = a.objectBlocker(o)
	}
	age := checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	return checks.Draft{
		RootCause: RootCauseProtectedResourceInUse,
		Summary:   fmt.Sprintf("%s for %s: volume still bound to %s (%s)", subj.noun, age, b.name(), b.state),
		Message: fmt.Sprintf("The volume was deleted while it is bound to %s, so the PV protection controller keeps finalizer "+
			"%s until the claim is gone: the volume is protected, not stuck. Delete the claim once nothing uses it (and its "+
			"own finding, if it has one, says what holds it); removing the finalizer would delete a volume a claim still "+
			"points to.", b.name(), finPVProtection),
		Evidence: []string{
			fmt.Sprintf("status.phase %s, claimRef %s/%s", pv.Status.Phase, cr.Namespace, cr.Name),
			"bound to " + b.name() + ": " + b.state,
			"finalizer " + finPVProtection + ": removed by the PV protection controller (kube-controller-manager) once the volume is not Bound",
		},
	}, []blocker{b}, true
}

// ownedBy returns the pods and objects being deleted that name uid as an owner; with blocking
// only those whose reference sets blockOwnerDeletion, as the foreground deletion waits for.
func (a *pass) ownedBy(uid types.UID, blocking bool) []blocker {
	counts := func(refs []metav1.OwnerReference) bool {
		for _, r := range refs {
			if r.UID == uid && (!blocking || r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion) {
				return true
			}
		}
		return false
	}
	var out []blocker
	for _, m := range a.s.PodsOwnedBy(uid) {
		if counts(m.OwnerReferences) {
			out = append(out, a.podBlocker(m))
		}
	}
	for _, o := range a.s.Objects {
		if o.Meta != nil && counts(o.Meta.OwnerReferences) {
			out = append(out, a.objectBlocker(o))
		}
	}
	return out
}

// dependentsRemaining: an object the garbage collector holds for its dependents, foreground
// (until every blocking dependent is gone) or orphan (until their references to it are removed).
func (a *pass) dependentsRemaining(subj subject, fin string) (checks.Draft, []blocker, bool) {
	deps := a.ownedBy(subj.meta.GetUID(), fin == finForeground)
	if len(deps) == 0 {
		return checks.Draft{}, nil, false
	}
	age := checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	msg := fmt.Sprintf("The object was deleted with foreground propagation: the garbage collector keeps finalizer %s "+
		"until every dependent whose ownerReference sets blockOwnerDeletion is gone, and %d remain. What holds the last "+
		"of them holds this object; removing the finalizer would leave its dependents running without an owner.", fin, len(deps))
	how := "removed by the garbage collector once every dependent with blockOwnerDeletion is gone"
	if fin == finOrphan {
		msg = fmt.Sprintf("The object was deleted with orphan propagation: the garbage collector keeps finalizer %s until it "+
			"has removed this object's ownerReference from each dependent, and %d still carry it. The garbage collector "+
			"(kube-controller-manager) has not finished: its logs say why.", fin, len(deps))
		how = "removed by the garbage collector once no dependent's ownerReferences name this object"
	}
	return checks.Draft{
		RootCause: RootCauseDependentsRemaining,
		Summary:   fmt.Sprintf("%s for %s: %s waits for %s", subj.noun, age, fin, blockerList(deps)),
		Message:   msg,
		Evidence:  append(blockerLines("dependent", deps), "finalizer "+fin+": "+how),
	}, deps, true
}

// instancesRemaining: a CustomResourceDefinition held until every instance is deleted. A CRD is
// named <plural>.<group>, so its instances are found among the objects being deleted.
func (a *pass) instancesRemaining(subj subject) (checks.Draft, []blocker, bool) {
	plural, group, ok := strings.Cut(subj.meta.GetName(), ".")
	if !ok {
		return checks.Draft{}, nil, false
	}
	var insts []blocker
	for _, o := range a.s.Objects {
		if o.Meta != nil && o.Resource.Group == group && o.Resource.Resource == plural {
			insts = append(insts, a.objectBlocker(o))
		}
	}
	if len(insts) == 0 {
		return checks.Draft{}, nil, false
	}
	age := checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	return checks.Draft{
		RootCause: RootCauseDependentsRemaining,
		Summary:   fmt.Sprintf("%s for %s: %d instance(s) of %s remain: %s", subj.noun, age, len(insts), subj.meta.GetName(), blockerList(insts)),
		Message: fmt.Sprintf("The definition was deleted: the apiextensions-apiserver deleted its instances and keeps finalizer "+
			"%s until the last one is gone, and %d are held by their own finalizers. What holds them holds the definition; "+
			"removing the finalizer would leave their data in etcd, served again if the definition comes back.", finCRDCleanup, len(insts)),
		Evidence: append(blockerLines("instance", insts),
			"finalizer "+finCRDCleanup+": removed by the apiextensions-apiserver once every instance of the definition is deleted"),
	}, insts, true
}
