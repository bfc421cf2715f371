package terminating

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Root causes of stuck-terminating (contract.md).
const (
	RootCauseNodeMissing               = "node-missing"
	RootCauseNodeNotReady              = "node-not-ready"
	RootCauseKwokStageNotRun           = "kwok-stage-not-run"
	RootCauseKruisePreDeleteHook       = "kruise-predelete-hook-pending"
	RootCauseOwnerPaused               = "owner-paused"
	RootCauseFinalizerReaddRace        = "finalizer-readd-race"
	RootCauseFinalizerOwnerMissing     = "finalizer-owner-missing"
	RootCauseFinalizerOwnerNotActing   = "finalizer-owner-not-acting"
	RootCauseKubeletKillFailing        = "kubelet-kill-failing"
	RootCauseNamespaceDiscoveryFailed  = "namespace-discovery-failed"
	RootCauseNamespaceContentRemaining = "namespace-content-remaining"
)

// rootCauses documents each root cause for `checks`, `explain` and the findings.
func rootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseNodeMissing, Title: "The pod's node no longer exists", Severity: report.SeverityError,
			Description: "The pod is bound to a node whose Node object does not exist. No kubelet will ever confirm " +
				"that its containers stopped. PodGC in kube-controller-manager force-deletes such pods after about " +
				"40 seconds, so a pod still there means PodGC is not running, or finalizers hold the pod after " +
				"the force delete.",
			References: []string{"kubernetes/kubernetes pkg/controller/podgc"},
			Actions:    []string{checks.ActionForceDelete, checks.ActionRemoveFinalizer}},
		{ID: RootCauseNodeNotReady, Title: "The pod's node stopped heartbeating", Severity: report.SeverityError,
			Description: "The pod is bound to a node whose Ready condition is False or Unknown and whose Lease in " +
				"kube-node-lease has not been renewed past the threshold: its kubelet is gone, so nothing confirms " +
				"that the containers stopped and the apiserver keeps the pod. Force-deleting frees the pod's name and " +
				"lets its controller replace it, but if the node is only partitioned the old containers keep running; " +
				"for pods with persistent volumes or a stable identity (StatefulSet) that can mean two writers.",
			References: []string{"kubernetes/enhancements#2268"},
			Actions:    []string{checks.ActionForceDelete}},
		{ID: RootCauseKwokStageNotRun, Title: "kwok did not run the pod's deletion stage", Severity: report.SeverityError,
			Description: "The pod runs on a node that kwok simulates. kwok plays the kubelet: its pod stages remove " +
				"its finalizer kwok.x-k8s.io/fake and delete the pod. That stage has not run. kwok v0.5.0 cancels " +
				"delayed stages when a stale re-listed copy of the pod arrives (kubernetes-sigs/kwok#958, fixed in " +
				"v0.5.1); other versions miss it when their stages do not match the pod. A restarted kwok re-plays " +
				"the stages; removing the finalizer lets the deletion finish.",
			Actions: []string{checks.ActionRemoveFinalizer}},
		{ID: RootCauseKruisePreDeleteHook, Title: "An OpenKruise preDelete hook is not released", Severity: report.SeverityWarning,
			Description: "The pod is in lifecycle state PreparingDelete and its workload's spec.lifecycle.preDelete " +
				"hook finalizers (or labels) are still on it. OpenKruise waits until the hook's owner, the component " +
				"that does the pre-delete work (draining, deregistering, backing up), removes them. Removing them by " +
				"hand skips that work, so no fix is offered: the hook owner must act.",
			References: []string{"openkruise/kruise pkg/util/lifecycle/lifecycle_utils.go"}},
		{ID: RootCauseOwnerPaused, Title: "The object or its Cluster API owner is paused", Severity: report.SeverityWarning,
			Description: "Cluster API controllers skip paused objects (annotation cluster.x-k8s.io/paused, or " +
				"Cluster spec.paused), so nothing removes the finalizers of a paused object being deleted. " +
				"clusterctl move pauses the source Cluster and marks objects it deletes with " +
				"clusterctl.cluster.x-k8s.io/delete-for-move; a leftover annotation marks an interrupted move. " +
				"Finish the move, or unpause the object if the pause is no longer wanted."},
		{ID: RootCauseFinalizerReaddRace, Title: "A controller keeps re-adding a finalizer", Severity: report.SeverityError,
			Description: "Warning events say \"no new finalizers can be added if the object is being deleted\": a " +
				"controller tries to add its finalizer to the object after its deletion began, and the apiserver " +
				"refuses with 422. The controller has not noticed the deletion, so it does not do its cleanup " +
				"either. Cluster API hit this in clusterctl move (kubernetes-sigs/cluster-api#11812, fixed in " +
				"v1.9.5 and v1.10.0)."},
		{ID: RootCauseFinalizerOwnerMissing, Title: "A finalizer's owner is not installed", Severity: report.SeverityError,
			Description: "The object waits for a finalizer whose controller does not run in the cluster: the owner " +
				"is taken from a table of known finalizers, or else from the field manager that added the finalizer " +
				"(metadata.managedFields), and no Deployment of it was found. Nothing will remove the finalizer; " +
				"removing it by hand skips the cleanup it guards, which the fix says.",
			Actions: []string{checks.ActionRemoveFinalizer}},
		{ID: RootCauseFinalizerOwnerNotActing, Title: "A finalizer's owner has not removed it", Severity: report.SeverityWarning,
			Description: "The controller that owns a remaining finalizer runs (or is built into the control plane), " +
				"but has not finished its cleanup and removed the finalizer. Its Warning events and logs say why. " +
				"No automatic fix: removing the finalizer while its owner is alive skips cleanup the owner still " +
				"intends to do."},
		{ID: RootCauseKubeletKillFailing, Title: "The kubelet cannot stop the pod", Severity: report.SeverityError,
			Description: "The pod's node is alive, but its kubelet has not confirmed that the containers stopped " +
				"(it deletes the pod with grace period 0 when they have). Events such as FailedKillPod, " +
				"FailedPreStopHook, ExceededGracePeriod or FailedUnMount, or containers still running, say what it " +
				"is stuck on. Look at the kubelet and container runtime on that node; force-deleting would leave " +
				"the containers running."},
		{ID: RootCauseNamespaceDiscoveryFailed, Title: "Namespace deletion blocked by API discovery", Severity: report.SeverityError,
			Description: "The namespace controller must list every API group to prove a namespace is empty before it " +
				"removes the kubernetes finalizer. An aggregated APIService that is unavailable makes discovery " +
				"fail (condition NamespaceDeletionDiscoveryFailure), which blocks the deletion of every namespace. " +
				"Fix the service behind the APIService, or delete the APIService if that API is gone. No fix " +
				"finalizes the namespace by force: that would leave its content behind in etcd.",
			References: []string{"kubernetes/kubernetes#60807", "kubernetes/kubernetes#75788"}},
		{ID: RootCauseNamespaceContentRemaining, Title: "Namespace content is not deleted yet", Severity: report.SeverityWarning,
			Description: "The namespace controller deleted what it could, but objects remain (conditions " +
				"NamespaceContentRemaining, NamespaceFinalizersRemaining, NamespaceDeletionContentFailure). The " +
				"namespace goes away when they do; their own findings say who holds them. No fix finalizes the " +
				"namespace by force."},
	}
}
