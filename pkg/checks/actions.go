package checks

// Fix action IDs (contract.md, "Fix actions").
const (
	ActionRequeueWorkload         = "requeue-workload"
	ActionRestartControllerLeader = "restart-controller-leader"
	ActionRemoveFinalizer         = "remove-finalizer"
	ActionForceDelete             = "force-delete"
	ActionEvictPod                = "evict-pod"
)

// Action describes a fix action for `checks` and `explain`.
type Action struct {
	ID            string
	Title         string
	Description   string
	Preconditions string
}

// Actions returns every fix action the plugin can apply.
func Actions() []Action {
	return []Action{
		{ID: ActionRequeueWorkload, Title: "Requeue the workload",
			Description:   "Annotates the owning workload with workloaddoctor.io/requeued-at, so its controller receives an update event and reconciles it again. Nothing else about the workload changes.",
			Preconditions: "the workload's UID is unchanged since the scan"},
		{ID: ActionRestartControllerLeader, Title: "Restart the controller leader",
			Description:   "Deletes the pod that holds the controller's leader Lease. Expectations live only in the leader's memory, so the next leader starts with none; another replica or the Deployment replaces the pod.",
			Preconditions: "the Lease holder is the same pod as at scan time"},
		{ID: ActionRemoveFinalizer, Title: "Remove one finalizer",
			Description:   "Removes exactly the named finalizer with a JSON patch that first tests the finalizer's value at its index; other finalizers and their order are kept. The cleanup that finalizer guards is skipped.",
			Preconditions: "the finalizer is still present and the object's resourceVersion is unchanged"},
		{ID: ActionForceDelete, Title: "Force-delete the pod",
			Description:   "Deletes the pod with grace period 0 and a UID precondition, as `kubectl delete --force --grace-period=0` does. If the node is only unreachable, the old containers may still run.",
			Preconditions: "the pod's node is missing, or NotReady past the threshold; the pod UID is unchanged"},
		{ID: ActionEvictPod, Title: "Evict the pod",
			Description:   "Evicts the pod through the Eviction API, so PodDisruptionBudgets are respected; its controller recreates it from the current template. A PDB refusal is reported, not retried.",
			Preconditions: "the pod UID is unchanged"},
	}
}

// LookupAction returns the action with the given ID.
func LookupAction(id string) (Action, bool) {
	for _, a := range Actions() {
		if a.ID == id {
			return a, true
		}
	}
	return Action{}, false
}
