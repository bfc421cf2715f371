package knowledge

// Components whose versions the checks read.
const (
	ComponentKruiseManager = "kruise-manager"
	ComponentKwok          = "kwok"
	ComponentAPIServer     = "kube-apiserver"
	ComponentClusterAPI    = "cluster-api"
)

// Bug IDs used by the checks.
const (
	BugPreNormalEventDropped    = "kruise-prenormal-event-dropped"
	BugOnDeleteRefresh          = "kruise-ondelete-refresh"
	BugKruiseDropsResizePolicy  = "kruise-drops-resize-policy"
	BugExpectationsLeak         = "kruise-expectations-leak"
	BugKwokStageNotRun          = "kwok-stage-not-run"
	BugCAPIFinalizerReadd       = "capi-move-finalizer-readd"
	BehaviourPreNormalScheduled = "kruise-prenormal-waits-for-scheduling"
	BehaviourResizeDefaulting   = "apiserver-defaults-resize-policy"
	BehaviourExpectationTimeout = "kruise-expectation-timeout-handling"
)

// Bug is a known defect or behaviour change of a component, with the versions it applies to.
type Bug struct {
	ID        string
	Component string
	Affected  Range
	// Gate, when set, is the feature gate that must be on for the bug to show.
	Gate string
	// FixedIn names the fix when it is not a release of Component (another tool's release).
	FixedIn   string
	Reference []string
	Summary   string
}

// bugs is the table the checks consult. Ranges are half-open: [From, Fixed).
var bugs = []Bug{
	{
		ID: BugPreNormalEventDropped, Component: ComponentKruiseManager,
		Affected: Range{From: "v1.4.0", Fixed: "v1.9.0"}, Gate: "CloneSetEventHandlerOptimization",
		Reference: []string{"openkruise/kruise#2057", "openkruise/kruise#2060"},
		Summary:   "the CloneSet pod event filter ignores preNormal hook finalizer changes, so no reconcile moves the pod out of PreparingNormal",
	},
	{
		// CloneSet OnDelete arrived in v1.9.0 (#2224). The fix, commit 58a5d52fb, is on master only: no
		// release tag up to v1.9.0 contains it and release-1.9 does not carry it, so every v1.9.x is
		// affected and the first release cut from master (v1.10.0) is the first fixed one.
		ID: BugOnDeleteRefresh, Component: ComponentKruiseManager,
		Affected:  Range{From: "v1.9.0", Fixed: "v1.10.0"},
		Reference: []string{"openkruise/kruise commit 58a5d52fb", "openkruise/kruise#2224"},
		Summary:   "with updateStrategy.type OnDelete, pods never leave PreparingNormal and never get the InPlaceUpdateReady condition",
	},
	{
		ID: BugKruiseDropsResizePolicy, Component: ComponentKruiseManager,
		Affected:  Range{Fixed: "v1.7.0"},
		Reference: []string{"openkruise/kruise#1683", "openkruise/kruise#1598"},
		Summary:   "kruise-manager is built against a Kubernetes API without resizePolicy; its in-place update drops the field and the apiserver rejects the update",
	},
	{
		ID: BugExpectationsLeak, Component: ComponentKruiseManager,
		Affected:  Range{Fixed: "v1.8.0"},
		Reference: []string{"openkruise/kruise#1765", "openkruise/kruise#1829"},
		Summary:   "a timed-out expectation is never dropped; the workload stays blocked until the leader restarts",
	},
	{
		ID: BehaviourExpectationTimeout, Component: ComponentKruiseManager,
		Affected: Range{From: "v1.8.0"}, Gate: "ForceDeleteTimeoutExpectationGate",
		Reference: []string{"openkruise/kruise#1829"},
		Summary:   "a timed-out scale expectation is dropped and the workload requeued after 10s",
	},
	{
		ID: BehaviourPreNormalScheduled, Component: ComponentKruiseManager,
		Affected:  Range{From: "v1.9.0"},
		Reference: []string{"openkruise/kruise#2087"},
		Summary:   "a pod with no preNormal hook stays PreparingNormal until it is scheduled",
	},
	{
		ID: BugKwokStageNotRun, Component: ComponentKwok,
		Affected:  Range{From: "v0.5.0", Fixed: "v0.5.1"},
		Reference: []string{"kubernetes-sigs/kwok#958", "kubernetes-sigs/kwok#962"},
		Summary:   "delayed stages such as pod-remove-finalizer are cancelled by a stale re-listed copy of the pod and never run",
	},
	{
		// The controllers' side came with v1.9.0 (#11286 moved adding the finalizer ahead of the
		// pause check) and was never taken back. The fix is in clusterctl's mover (#11814 in
		// v1.10.0, backported as #11821 in v1.9.5): it deletes before removing finalizers. Which
		// clusterctl ran a move is recorded nowhere in the cluster, so the range is the
		// controllers' and FixedIn names the clusterctl releases.
		ID: BugCAPIFinalizerReadd, Component: ComponentClusterAPI,
		Affected: Range{From: "v1.9.0"},
		FixedIn:  "clusterctl v1.9.5 and v1.10.0 (the binary that runs the move, not the controllers)",
		Reference: []string{"kubernetes-sigs/cluster-api#11812", "kubernetes-sigs/cluster-api#11286",
			"kubernetes-sigs/cluster-api#11814", "kubernetes-sigs/cluster-api#11821"},
		Summary: "controllers from v1.9.0 add their finalizer before checking for a pause, so they re-add the finalizers that a clusterctl older than v1.9.5 removes before deleting during a move; the apiserver refuses with 422 and the controllers log it as a Reconciler error",
	},
	{
		ID: BehaviourResizeDefaulting, Component: ComponentAPIServer,
		Affected: Range{From: "v1.27.0", Fixed: "v1.33.0"}, Gate: "InPlacePodVerticalScaling",
		Reference: []string{"kubernetes/kubernetes#128920"},
		Summary:   "the apiserver defaults containers[].resizePolicy on pods (not on templates) to NotRequired for cpu and memory",
	},
}

// Bugs returns every known bug (a copy, so callers cannot change the table).
func Bugs() []Bug { return append([]Bug(nil), bugs...) }

// LookupBug returns the bug with the given ID.
func LookupBug(id string) (Bug, bool) {
	for _, b := range bugs {
		if b.ID == id {
			return b, true
		}
	}
	return Bug{}, false
}

// Affects reports whether the bug applies to the component at version v with the given gates.
// gates may be nil when the bug has no gate.
func (b Bug) Affects(v Version, gates FeatureGates) bool {
	if !b.Affected.Contains(v) {
		return false
	}
	return b.Gate == "" || gates.Enabled(b.Gate, true)
}

// Affected answers "is this running version affected by bug id" in one call.
func Affected(id string, v Version, gates FeatureGates) (Bug, bool) {
	b, ok := LookupBug(id)
	if !ok {
		return Bug{}, false
	}
	return b, b.Affects(v, gates)
}
