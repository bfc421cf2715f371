package checks

// Fix action IDs (docs/contract.md, "Fix actions"), for checks to propose. pkg/fix implements and
// documents each of them (fix.NewCatalog).
const (
	ActionRequeueWorkload         = "requeue-workload"
	ActionRestartControllerLeader = "restart-controller-leader"
	ActionRemoveFinalizer         = "remove-finalizer"
	ActionForceDelete             = "force-delete"
	ActionEvictPod                = "evict-pod"
	ActionDeletePod               = "delete-pod"
)
