package rollout

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// A rollout whose new pods are never created, as v1.9.0 leaves it when the apiserver refuses
// them (a ResourceQuota): createPods records FailedCreate on the CloneSet and returns the error
// (pkg/controller/cloneset/sync/cloneset_scale.go), doReconcile still writes the status
// (updatedReplicas 0, one old pod deleted for the update) and calculateProgressingStatus sets
// ProgressDeadlineExceeded. No pod is there to judge: the finding says none exists and where the
// reason is recorded, rather than pointing at new-revision pods' events.
func TestDeadlineWithoutNewPods(t *testing.T) {
	st := ct.CloneSetStatus(2, 1, 0, newRev, oldRev)
	st["conditions"] = []any{deadlineExceeded(time.Minute)}
	w := cloneSet(t, 0, 0, ct.SpecField(int64(30), "progressDeadlineSeconds"), ct.Status(st))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-old", oldRev, time.Hour)}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseProgressDeadline || len(f.BlockedBy) != 0 {
		t.Fatalf("got %s blockedBy %+v", f.RootCause.ID, f.BlockedBy)
	}
	evidenceHas(t, f, "0 of 3 pods to update are on revision "+newRev)
	evidenceHas(t, f, "condition Progressing=False reason ProgressDeadlineExceeded")
	evidenceHas(t, f, "no pod of revision "+newRev+" exists")
	if !strings.Contains(f.RootCause.Message, "FailedCreate") {
		t.Errorf("message does not say where a refused create is recorded: %s", f.RootCause.Message)
	}
}

// With a new pod there to read, the evidence does not claim there is none.
func TestDeadlineWithNewPodsNamesNoMissingPod(t *testing.T) {
	w := cloneSet(t, 1, 1, ct.SpecField(int64(60), "progressDeadlineSeconds"), withConditions(1, 1, deadlineExceeded(time.Minute)))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-new", newRev, 3*time.Minute)}}
	f := only(t, run(t, c, -1))
	if slices.ContainsFunc(f.RootCause.Evidence, func(e string) bool { return strings.Contains(e, "exists") }) {
		t.Errorf("evidence claims no new pod: %q", f.RootCause.Evidence)
	}
}

// The same refused rollout within its deadline (10m) is no finding: the controller keeps trying.
func TestNoNewPodsWithinDeadline(t *testing.T) {
	st := ct.CloneSetStatus(2, 1, 0, newRev, oldRev)
	st["conditions"] = []any{progressing("CloneSetUpdated", time.Minute)}
	w := cloneSet(t, 0, 0, ct.SpecField(int64(600), "progressDeadlineSeconds"), ct.Status(st))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-old", oldRev, time.Hour)}}
	none(t, run(t, c, -1))
}

// quotaRefusal is the FailedCreate event v1.9.0's createPods records on the CloneSet when a
// ResourceQuota refuses a pod: from cloneset-controller, the error then the pod's JSON
// (pkg/controller/cloneset/sync/cloneset_scale.go), seen count times, last lastAgo ago.
func quotaRefusal(w *kruise.Workload, count int32, firstAgo, lastAgo time.Duration) *corev1.Event {
	msg := `failed to create pod: pods "web-x7k2p" is forbidden: exceeded quota: compute, requested: requests.cpu=2, ` +
		`used: requests.cpu=0, limited: requests.cpu=1, pod: {"metadata":{"name":"web-x7k2p"},"spec":{"containers":[{"name":"app",` +
		`"env":[{"name":"DB_PASSWORD","value":"hunter2"}]}]}}`
	return ct.Event(ct.RefTo(w.APIVersion, w.Kind, w), corev1.EventTypeWarning, "FailedCreate", msg,
		ct.From("cloneset-controller"), ct.Count(count), ct.Seen(firstAgo, lastAgo))
}

// refusedCloneSet is a CloneSet past its 30s deadline with no pod of its update revision, as
// TestDeadlineWithoutNewPods, and its one old pod created an hour ago.
func refusedCloneSet(t *testing.T) (*kruise.Workload, *corev1.Pod) {
	st := ct.CloneSetStatus(2, 1, 0, newRev, oldRev)
	st["conditions"] = []any{deadlineExceeded(time.Minute)}
	w := cloneSet(t, 0, 0, ct.SpecField(int64(30), "progressDeadlineSeconds"), ct.Status(st))
	return w, clonePod(w, "web-old", oldRev, time.Hour)
}

const quotaMessage = `failed to create pod: pods "web-x7k2p" is forbidden: exceeded quota: compute, requested: requests.cpu=2, ` +
	`used: requests.cpu=0, limited: requests.cpu=1`

// A ResourceQuota refuses every new pod: the finding quotes the newest refusal, without the
// pod's JSON (env values), and names it as what a person must act on.
func TestDeadlineQuotesRefusedCreate(t *testing.T) {
	w, old := refusedCloneSet(t)
	normal := ct.Event(ct.RefTo(w.APIVersion, w.Kind, w), corev1.EventTypeNormal, "SuccessfulDelete", "succeed to delete pod web-old2",
		ct.Seen(3*time.Minute, 3*time.Minute))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{old},
		Events: []*corev1.Event{quotaRefusal(w, 3, 10*time.Minute, 5*time.Minute), quotaRefusal(w, 9, 4*time.Minute, 20*time.Second), normal}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCausePodCreationRefused {
		t.Fatalf("root cause %s", f.RootCause.ID)
	}
	evidenceHas(t, f, "no pod of revision "+newRev+" exists; the newest create the apiserver refused: "+
		"event Warning FailedCreate from cloneset-controller (x9, last 20s ago): "+quotaMessage)
	evidenceHas(t, f, "refused by ResourceQuota compute: requests.cpu: requested 2, used 0, hard 1")
	for _, e := range f.RootCause.Evidence {
		if strings.Contains(e, "hunter2") || strings.Contains(e, "x3,") {
			t.Errorf("evidence quotes the pod dump or an older refusal: %s", e)
		}
	}
	if !strings.HasSuffix(f.Summary, "the apiserver refuses its new pods (ResourceQuota compute)") || !strings.Contains(f.RootCause.Message, "exceeded quota: compute") ||
		strings.Contains(f.RootCause.Message, "hunter2") {
		t.Errorf("summary %q / message %q do not name the refusal", f.Summary, f.RootCause.Message)
	}
	if len(f.Fixes) != 0 {
		t.Errorf("fixes %+v: only a person can lift a quota", f.Fixes)
	}
}

// Some pods of the revision were created, the rest refused since: the evidence says how many
// exist and quotes the refusal, after the counts.
func TestDeadlineQuotesRefusalWithSomeNewPods(t *testing.T) {
	w := cloneSet(t, 1, 1, ct.SpecField(int64(60), "progressDeadlineSeconds"), withConditions(1, 1, deadlineExceeded(time.Minute)))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-new", newRev, 3*time.Minute)},
		Events: []*corev1.Event{quotaRefusal(w, 4, 3*time.Minute, time.Minute)}}
	f := only(t, run(t, c, -1))
	evidenceHas(t, f, "1 of the 3 pods to update exist on revision "+newRev+"; the newest create the apiserver refused: ")
	if f.RootCause.ID != RootCausePodCreationRefused || !strings.Contains(f.RootCause.Message, "exceeded quota: compute") {
		t.Errorf("got %s: %s", f.RootCause.ID, f.RootCause.Message)
	}
}

// A refusal last seen before the workload's newest pod was created was got past: it is not
// quoted, and the bare deadline says none was read since.
func TestDeadlineIgnoresRefusalBeforeNewestPod(t *testing.T) {
	w, old := refusedCloneSet(t)
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{old},
		Events: []*corev1.Event{quotaRefusal(w, 2, 2*time.Hour, 61*time.Minute)}}
	f := only(t, run(t, c, -1))
	evidenceHas(t, f, "no pod of revision "+newRev+" exists, and no FailedCreate event on the CloneSet was read since 60m ago")
	if strings.Contains(f.Summary, "refuses") || strings.Contains(f.RootCause.Message, "exceeded quota") {
		t.Errorf("a stale refusal is named: %q / %q", f.Summary, f.RootCause.Message)
	}
}

// Events the scan could not read degrade the check: the finding stays, says the events were
// not read, and the coverage names the check degraded rather than skipped.
func TestDeadlineEventsUnreadable(t *testing.T) {
	w, old := refusedCloneSet(t)
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{old},
		Unread: map[snapshot.Input]error{snapshot.InputEvents: errors.New(`events is forbidden: User "viewer" cannot list resource "events"`)}}
	fs, cov := checks.Run(c.Snapshot(), []checks.Check{New()}, -1)
	f := only(t, fs)
	if f.RootCause.ID != RootCauseProgressDeadline {
		t.Fatalf("root cause %s", f.RootCause.ID)
	}
	evidenceHas(t, f, "no pod of revision "+newRev+" exists; the controller records a create the apiserver refuses as a FailedCreate "+
		"event on the CloneSet, and the events could not be read: events is forbidden")
	if len(cov.Degraded) != 1 || cov.Degraded[0].Check != ID || len(cov.Skipped) != 0 {
		t.Errorf("coverage degraded %+v skipped %+v", cov.Degraded, cov.Skipped)
	}
}

// Refusals on a rollout still within its deadline, or on a CloneSet whose rollout completed, are
// no finding.
func TestRefusalWithoutStalledRollout(t *testing.T) {
	st := ct.CloneSetStatus(2, 1, 0, newRev, oldRev)
	st["conditions"] = []any{progressing("CloneSetUpdated", time.Minute)}
	fresh := cloneSet(t, 0, 0, ct.SpecField(int64(600), "progressDeadlineSeconds"), ct.Status(st))
	done := ct.Workload(t, kruise.KindCloneSet, "shop", "api", ct.Replicas(3), ct.Generation(2),
		ct.Template(corev1.Container{Name: "app", Image: "nginx:1.28"}), ct.Status(ct.CloneSetStatus(2, 3, 3, newRev, newRev)))
	c := ct.Cluster{Workloads: []*kruise.Workload{fresh, done}, Pods: []*corev1.Pod{clonePod(fresh, "web-old", oldRev, time.Hour)},
		Events: []*corev1.Event{quotaRefusal(fresh, 5, 5*time.Minute, 10*time.Second), quotaRefusal(done, 5, 5*time.Minute, 10*time.Second)}}
	none(t, run(t, c, -1))
}
