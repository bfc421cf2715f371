package checks

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Shared by the OpenKruise checks (stuck-preparing-normal, expectations-unsatisfied).

// Root cause shared by both OpenKruise checks.
const rcControllerUnavailable = "controller-unavailable"

// kruiseEnv is what the OpenKruise checks know about the running kruise-manager, read once per Run.
type kruiseEnv struct {
	s   *snapshot.Snapshot
	mgr *kruise.Manager
	// mgrUnknown says why the manager is unknown (mgr == nil).
	mgrUnknown string
	lease      *coordinationv1.Lease
	// holder is the Lease holderIdentity and holderPod the pod it names ("" when unknown).
	holder, holderPod string
	// logs are the leader's parsed expectation lines; logsRead is false when no log was read.
	logs     []kruise.ExpectationLog
	logsRead bool
	// logsUnread says why no log was read.
	logsUnread string
}

func newKruiseEnv(s *snapshot.Snapshot) *kruiseEnv {
	e := &kruiseEnv{s: s}
	ns, name := s.Settings.KruiseNamespace, s.Settings.KruiseDeployment
	if ns == "" || name == "" {
		def := snapshot.DefaultSettings()
		ns, name = def.KruiseNamespace, def.KruiseDeployment
	}
	e.mgr = kruise.FindManager(s.Deployments, ns, name)
	if e.mgr == nil {
		if err, ok := s.Unread[snapshot.InputControllers]; ok {
			e.mgrUnknown = fmt.Sprintf("kruise-manager could not be read (%v)", err)
		} else {
			e.mgrUnknown = fmt.Sprintf("kruise-manager not found: no Deployment %s/%s and none running image %s", ns, name, kruise.ManagerImageRepository)
		}
		e.logsUnread = "the kruise-manager is unknown"
		return e
	}
	if l, ok := s.Lease(e.mgr.LeaseNamespace, e.mgr.LeaseName); ok {
		e.lease = l
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			e.holder = *l.Spec.HolderIdentity
			e.holderPod = kruise.HolderPod(e.holder)
		}
	}
	switch {
	case e.holderPod == "":
		e.logsUnread = "no leader holds the Lease " + e.mgr.LeaseNamespace + "/" + e.mgr.LeaseName
		if err, ok := s.Unread[snapshot.InputControllerLogs]; ok {
			e.logsUnread = err.Error()
		}
	default:
		key := e.mgr.Deployment.Namespace + "/" + e.holderPod
		if text, ok := s.Logs[key]; ok {
			e.logsRead = true
			e.logs = kruise.ParseExpectationLogs(text, s.Now)
		} else if err, ok := s.Unread[snapshot.InputControllerLogs]; ok {
			e.logsUnread = err.Error()
		} else {
			e.logsUnread = "the log of " + key + " was not read"
		}
	}
	return e
}

// managerName renders the manager Deployment for evidence.
func (e *kruiseEnv) managerName() string {
	if e.mgr == nil {
		return "kruise-manager"
	}
	return "Deployment " + e.mgr.Deployment.Namespace + "/" + e.mgr.Deployment.Name
}

// versionKnown reports whether the manager's version could be read from its image.
func (e *kruiseEnv) versionKnown() bool { return e.mgr != nil && e.mgr.VersionErr == nil }

// managerEvidence is the line that names the manager, its image and version.
func (e *kruiseEnv) managerEvidence() string {
	switch {
	case e.mgr == nil:
		return e.mgrUnknown + "; version and feature gates unknown"
	case e.mgr.VersionErr != nil:
		return fmt.Sprintf("kruise-manager %s runs image %q whose version is unknown (%v)", e.managerName(), e.mgr.Image, e.mgr.VersionErr)
	}
	return fmt.Sprintf("kruise-manager %s runs image %s (%s)", e.managerName(), e.mgr.Image, e.mgr.Version)
}

// affected reports whether the running manager has the known bug, with the evidence lines.
func (e *kruiseEnv) affected(bugID string) (knowledge.Bug, bool) {
	if !e.versionKnown() {
		b, _ := knowledge.LookupBug(bugID)
		return b, false
	}
	return knowledge.Affected(bugID, e.mgr.Version, e.mgr.Gates)
}

// expectationTimeout is the manager's --expectation-timeout (default 5m).
func (e *kruiseEnv) expectationTimeout() time.Duration {
	if e.mgr == nil || e.mgr.ExpectationTimeout <= 0 {
		return 5 * time.Minute
	}
	return e.mgr.ExpectationTimeout
}

// unavailable reports whether the manager cannot be reconciling anything: its Deployment has no
// available replica, or its leader Lease was not renewed within its lease duration.
func (e *kruiseEnv) unavailable() (bool, []string) {
	if e.mgr == nil {
		return false, nil
	}
	var why []string
	d := e.mgr.Deployment
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.AvailableReplicas == 0 {
		why = append(why, Evidencef("%s has no available replica (status.availableReplicas 0, spec.replicas %d, status.replicas %d)",
			e.managerName(), want, d.Status.Replicas))
		for _, c := range d.Status.Conditions {
			if c.Type == "Available" && c.Status != corev1.ConditionTrue {
				why = append(why, Evidencef("%s condition Available=%s reason %s: %s", e.managerName(), c.Status, c.Reason, krTruncate(c.Message, 200)))
			}
		}
	}
	if l := e.lease; l != nil {
		renewed := krLeaseRenewTime(l)
		if !renewed.IsZero() && l.Spec.LeaseDurationSeconds != nil {
			dur := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			if e.s.Now.Sub(renewed) > dur {
				holder := e.holder
				if holder == "" {
					holder = "nobody"
				}
				why = append(why, Evidencef("leader Lease %s/%s (holder %s) was last renewed %s ago at %s, longer than its leaseDurationSeconds %d",
					l.Namespace, l.Name, holder, Age(e.s.Now, renewed), renewed.UTC().Format(time.RFC3339), *l.Spec.LeaseDurationSeconds))
			}
		}
	}
	return len(why) > 0, why
}

// krLeaseRenewTime is when the Lease was last renewed (or acquired).
func krLeaseRenewTime(l *coordinationv1.Lease) time.Time {
	switch {
	case l.Spec.RenewTime != nil:
		return l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

// leaderEvidence names the leader the checks saw.
func (e *kruiseEnv) leaderEvidence() string {
	switch {
	case e.mgr == nil:
		return ""
	case e.lease == nil:
		return Evidencef("leader Lease %s/%s not found", e.mgr.LeaseNamespace, e.mgr.LeaseName)
	case e.holder == "":
		return Evidencef("leader Lease %s/%s has no holder", e.lease.Namespace, e.lease.Name)
	}
	renewed := krLeaseRenewTime(e.lease)
	return Evidencef("leader: pod %s/%s holds Lease %s/%s (renewed %s ago)", e.mgr.Deployment.Namespace, e.holderPod,
		e.lease.Namespace, e.lease.Name, Age(e.s.Now, renewed))
}

// restartFix is the restart-controller-leader fix, when a leader is known.
func (e *kruiseEnv) restartFix() (report.Fix, bool) {
	if e.lease == nil || e.holder == "" {
		return report.Fix{}, false
	}
	return report.Fix{
		Action: ActionRestartControllerLeader,
		Description: fmt.Sprintf("delete the kruise-manager leader pod %s/%s; the next leader starts with no expectations",
			e.mgr.Deployment.Namespace, e.holderPod),
		Risk: report.RiskMedium,
		Params: map[string]string{
			"leaseNamespace": e.lease.Namespace, "leaseName": e.lease.Name, "holderIdentity": e.holder,
			// The leader pod runs in the manager's namespace, which --leader-election-namespace may differ from.
			"podNamespace": e.mgr.Deployment.Namespace,
		},
	}, true
}

// krRequeueFix is the requeue-workload fix for the named workload.
func krRequeueFix(kind, namespace, name string) report.Fix {
	return report.Fix{
		Action:      ActionRequeueWorkload,
		Description: fmt.Sprintf("annotate %s %s/%s with workloaddoctor.io/requeued-at so the kruise-manager reconciles it again", kind, namespace, name),
		Risk:        report.RiskLow,
	}
}

// krThreshold is the age a condition must reach. Without --min-age the check's own default
// stands for "as long as the manager's --expectation-timeout" (its wait before giving up on an
// expectation); a value from --min-age, even one equal to the default, is used as given.
func krThreshold(s *snapshot.Snapshot, threshold, ownDefault, expectationTimeout time.Duration) time.Duration {
	if s.Scope.MinAgeSet || threshold != ownDefault {
		return threshold
	}
	return expectationTimeout
}

// ---- managedFields ----

// krFieldsOf decodes a managedFields entry's fieldsV1.
func krFieldsOf(e metav1.ManagedFieldsEntry) map[string]any {
	if e.FieldsV1 == nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(e.FieldsV1.Raw, &m) != nil {
		return nil
	}
	return m
}

// krHasField reports whether the fields set holds the path (each element a fieldsV1 key such as
// "f:metadata", "f:labels", `v:"example.com/hook"`).
func krHasField(fields map[string]any, path ...string) bool {
	cur := fields
	for _, p := range path {
		next, ok := cur[p]
		if !ok {
			return false
		}
		m, ok := next.(map[string]any)
		if !ok {
			return false
		}
		cur = m
	}
	return true
}

// krToucher is a field manager that set a field, and when it last wrote the object.
type krToucher struct {
	Manager string
	Time    time.Time
}

func (f krToucher) String() string {
	if f.Time.IsZero() {
		return f.Manager
	}
	return f.Manager + " at " + f.Time.UTC().Format(time.RFC3339)
}

// krTouchers returns the field managers whose fields include the path, newest first.
func krTouchers(m metav1.Object, path ...string) []krToucher {
	var out []krToucher
	for _, e := range m.GetManagedFields() {
		if krHasField(krFieldsOf(e), path...) {
			t := krToucher{Manager: e.Manager}
			if e.Time != nil {
				t.Time = e.Time.Time
			}
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out
}

func krJoinTouchers(ts []krToucher) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, t.String())
	}
	return strings.Join(parts, ", ")
}

// krLastWrite returns the newest managedFields time of the entries matching keep, and the manager.
func krLastWrite(m metav1.Object, keep func(metav1.ManagedFieldsEntry) bool) (time.Time, string) {
	var t time.Time
	var who string
	for _, e := range m.GetManagedFields() {
		if e.Time == nil || !keep(e) {
			continue
		}
		if e.Time.After(t) {
			t, who = e.Time.Time, e.Manager
		}
	}
	return t, who
}

// krSpecWrite is the last write that set fields under spec (not through a subresource).
func krSpecWrite(m metav1.Object) (time.Time, string) {
	return krLastWrite(m, func(e metav1.ManagedFieldsEntry) bool {
		return e.Subresource == "" && krHasField(krFieldsOf(e), "f:spec")
	})
}

// krStatusWrite is the last write through the status subresource.
func krStatusWrite(m metav1.Object) (time.Time, string) {
	return krLastWrite(m, func(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "status" })
}

// krMetaWrite is the last write of an object's main resource (labels, finalizers, spec).
func krMetaWrite(m metav1.Object) time.Time {
	t, _ := krLastWrite(m, func(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "" })
	return t
}

// ---- pods and events ----

// krControlledBy reports whether the pod's controller reference names the UID.
func krControlledBy(p *metav1.ObjectMeta, w *kruise.Workload) bool {
	ref := snapshot.ControllerOf(p)
	return ref != nil && ref.UID == w.UID
}

// krActivePod mirrors kubecontroller.IsPodActive: not being deleted, not Succeeded or Failed.
// A pod not read in full has no known phase and counts as active unless being deleted.
func krActivePod(s *snapshot.Snapshot, p *metav1.ObjectMeta) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	full, ok := s.FullPod(p.UID)
	return !ok || (full.Status.Phase != corev1.PodSucceeded && full.Status.Phase != corev1.PodFailed)
}

// krOwnedPods splits the pods a workload controls into active and terminating ones.
func krOwnedPods(s *snapshot.Snapshot, w *kruise.Workload) (active, terminating []*metav1.ObjectMeta) {
	for _, p := range s.PodsOwnedBy(w.UID) {
		if !krControlledBy(p, w) {
			continue
		}
		if krActivePod(s, p) {
			active = append(active, p)
		} else if p.DeletionTimestamp != nil {
			terminating = append(terminating, p)
		}
	}
	sort.Slice(active, func(i, j int) bool { return active[i].Name < active[j].Name })
	return active, terminating
}

// krLifecycleSince is when the pod entered its lifecycle state: the timestamp annotation kruise
// rewrites on every state change, else the pod's creation.
func krLifecycleSince(p *metav1.ObjectMeta) (time.Time, string) {
	if v := p.Annotations[kruise.AnnotationLifecycleTime]; v != "" {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t, "annotation " + kruise.AnnotationLifecycleTime
		}
	}
	return p.CreationTimestamp.Time, "creation time (no " + kruise.AnnotationLifecycleTime + " annotation)"
}

// krHookMisses lists what a lifecycle hook still waits for on a pod: each missing finalizer and
// each label missing or with another value (IsPodAllHooked, pkg/util/lifecycle).
func krHookMisses(h *kruise.LifecycleHook, p *metav1.ObjectMeta) []string {
	if h == nil {
		return nil
	}
	var out []string
	have := map[string]bool{}
	for _, f := range p.Finalizers {
		have[f] = true
	}
	for _, f := range h.FinalizersHandler {
		if !have[f] {
			line := Evidencef("finalizer %s is missing", f)
			if ts := krTouchers(p, "f:metadata", "f:finalizers"); len(ts) > 0 {
				line += Evidencef(" (finalizers last set by %s)", krJoinTouchers(ts))
			} else {
				line += " (no field manager has set any finalizer)"
			}
			out = append(out, line)
		}
	}
	keys := make([]string, 0, len(h.LabelsHandler))
	for k := range h.LabelsHandler {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := h.LabelsHandler[k]
		got, ok := p.Labels[k]
		switch {
		case !ok:
			out = append(out, Evidencef("label %s is missing, the hook wants %q (no field manager has set it)", k, want))
		case got != want:
			line := Evidencef("label %s is %q, the hook wants %q", k, got, want)
			if ts := krTouchers(p, "f:metadata", "f:labels", "f:"+k); len(ts) > 0 {
				line += Evidencef(" (set by %s)", krJoinTouchers(ts))
			}
			out = append(out, line)
		}
	}
	return out
}

// krHookSatisfied says who put the hook's finalizers and labels in place.
func krHookSatisfied(h *kruise.LifecycleHook, p *metav1.ObjectMeta) []string {
	var out []string
	for _, f := range h.FinalizersHandler {
		line := Evidencef("preNormal finalizer %s is present", f)
		if ts := krTouchers(p, "f:metadata", "f:finalizers", fmt.Sprintf("v:%q", f)); len(ts) > 0 {
			line += Evidencef(" (added by %s)", krJoinTouchers(ts))
		}
		out = append(out, line)
	}
	keys := make([]string, 0, len(h.LabelsHandler))
	for k := range h.LabelsHandler {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		line := Evidencef("preNormal label %s=%q is present", k, h.LabelsHandler[k])
		if ts := krTouchers(p, "f:metadata", "f:labels", "f:"+k); len(ts) > 0 {
			line += Evidencef(" (set by %s)", krJoinTouchers(ts))
		}
		out = append(out, line)
	}
	return out
}

// krEventLine renders an event for evidence: reason, type, count, age and message (cut short).
func krEventLine(now time.Time, e *corev1.Event) string {
	count := e.Count
	if e.Series != nil && e.Series.Count > count {
		count = e.Series.Count
	}
	src := e.Source.Component
	if src == "" {
		src = e.ReportingController
	}
	return Evidencef("event %s %s from %s (x%d, last %s ago): %s", e.Type, e.Reason, src, max(count, 1),
		Age(now, snapshot.EventTime(e)), krEventMessage(e.Message))
}

// krEventMessage cuts kruise's FailedCreate dumps ("failed to create pod: <err>, pod: {...}"):
// the pod JSON can hold environment values, which evidence never prints.
func krEventMessage(msg string) string {
	for _, cut := range []string{", pod: {", ", pvc: {"} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = msg[:i]
		}
	}
	return krTruncate(msg, 300)
}

// krTruncate shortens s to n bytes at most, marking the cut.
func krTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// krPodCondition returns the pod's condition of the given type.
func krPodCondition(p *corev1.Pod, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// krWorkloadRef names a Kruise workload in a finding.
func krWorkloadRef(w *kruise.Workload) report.ObjectRef {
	return Ref(w.APIVersion, w.Kind, &w.ObjectMeta)
}

// krIsOwner reports whether an ownerReference names an OpenKruise workload of the given kinds.
func krIsOwner(ref *metav1.OwnerReference, kinds ...string) bool {
	if ref == nil || !strings.HasPrefix(ref.APIVersion, kruise.Group+"/") {
		return false
	}
	for _, k := range kinds {
		if ref.Kind == k {
			return true
		}
	}
	return false
}
