package kruise

import "time"

// LogKind says which expectation line of the kruise-manager a log line is.
type LogKind string

// The expectation lines the checks use (pkg/controller/cloneset/cloneset_controller.go and
// pkg/controller/daemonset/daemonset_controller.go). The overtime lines are logged at the default
// verbosity; the "Not satisfied" lines only at -v=4 and above.
const (
	// LogScaleOvertime: scale expectations unsatisfied past --expectation-timeout; the reconcile is skipped.
	LogScaleOvertime LogKind = "scale-overtime"
	// LogScaleOvertimeDropped: v1.8.0+ with ForceDeleteTimeoutExpectationGate dropped the timed-out expectation.
	LogScaleOvertimeDropped LogKind = "scale-overtime-dropped"
	// LogPodUpdateOvertime: a pod's resourceVersion expectation timed out; the reconcile is skipped.
	LogPodUpdateOvertime LogKind = "pod-update-overtime"
	// LogRevisionUpdateOvertime: the updateRevision's expectation timed out (the controller drops it and goes on).
	LogRevisionUpdateOvertime LogKind = "revision-update-overtime"
	// LogNotSatisfiedScale: scale expectations not yet satisfied (V(4)).
	LogNotSatisfiedScale LogKind = "scale-not-satisfied"
	// LogNotSatisfiedPodUpdate: a pod's resourceVersion expectation not yet satisfied (V(4)).
	LogNotSatisfiedPodUpdate LogKind = "pod-update-not-satisfied"
)

// Overtime reports whether the line says an expectation outlived --expectation-timeout.
func (k LogKind) Overtime() bool {
	switch k {
	case LogScaleOvertime, LogScaleOvertimeDropped, LogPodUpdateOvertime, LogRevisionUpdateOvertime:
		return true
	}
	return false
}

// Scale reports whether the line is about scale (create/delete) expectations.
func (k LogKind) Scale() bool {
	return k == LogScaleOvertime || k == LogScaleOvertimeDropped || k == LogNotSatisfiedScale
}

// ExpectationLog is one parsed expectation line of the kruise-manager's log.
type ExpectationLog struct {
	// Line is the log line as read, without the trailing newline.
	Line string
	Kind LogKind
	// Structured is true for the klog key=value form (v1.7.0+), false for the printf form (<= v1.6).
	Structured bool
	// Time is from the klog header (month, day and clock; the year is inferred). Zero when absent.
	Time time.Time
	// WorkloadKind is CloneSet or DaemonSet (Advanced DaemonSet).
	WorkloadKind string
	// Namespace and Name are the workload's.
	Namespace, Name string
	// DirtyPods maps "create"/"delete" to the pod names the scale expectations wait for.
	DirtyPods map[string][]string
	// Pod is the pod (name only) whose update the controller waits for.
	Pod string
	// Revision is the updateRevision the controller waits for.
	Revision string
	// Overtime is how long the expectation has been unsatisfied, when the line says.
	Overtime time.Duration
}

// message patterns, structured (v1.7.0+) then printf (<= v1.6.x).
type logPattern struct {
	kind    LogKind
	wlKind  string
	message string // exact structured message
	prefix  string // printf message prefix, followed by "<ns>/<name>, ..."
}

// Order matters: longer messages that share a prefix with a shorter one come first.
var logPatterns = []logPattern{
	{kind: LogScaleOvertimeDropped, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime, and force delete the timeout Expectation"},
	{kind: LogScaleOvertime, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime", prefix: "Expectation unsatisfied overtime for "},
	{kind: LogPodUpdateOvertime, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime for CloneSet, wait for pod updating timeout"},
	{kind: LogRevisionUpdateOvertime, wlKind: KindCloneSet, message: "Expectation unsatisfied overtime for CloneSet, wait for updateRevision updating timeout"},
	{kind: LogPodUpdateOvertime, wlKind: KindDaemonSet, message: "Expectation unsatisfied resourceVersion overtime for DaemonSet, wait for pod updating", prefix: "Expectation unsatisfied resourceVersion overtime for "},
	{kind: LogNotSatisfiedScale, wlKind: KindCloneSet, message: "Not satisfied scale", prefix: "Not satisfied scale for "},
	{kind: LogNotSatisfiedPodUpdate, wlKind: KindCloneSet, message: "Not satisfied resourceVersion for CloneSet, wait for pod updating", prefix: "Not satisfied resourceVersion for "},
	{kind: LogNotSatisfiedPodUpdate, wlKind: KindDaemonSet, message: "Not satisfied resourceVersion for DaemonSet, wait for pod updating"},
}

// DirtyPodNames returns every pod in DirtyPods, sorted by action then as logged.
func (l ExpectationLog) DirtyPodNames() []string {
	var out []string
	for _, action := range []string{"create", "delete"} {
		out = append(out, l.DirtyPods[action]...)
	}
	for action, pods := range l.DirtyPods {
		if action != "create" && action != "delete" {
			out = append(out, pods...)
		}
	}
	return out
}
