package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Faults between the tool and the apiserver, injected by a proxy in front of the real apiserver
// (testcluster.FaultProxy) on a cluster with nine stuck pods. Each scenario compares the scan
// through the faults with the same scan without them.

const (
	ftNamespace = "faults"
	// ftFinalizer's owner (Argo CD) is not installed: each pod is a finalizer-owner-missing
	// finding that offers remove-finalizer.
	ftFinalizer = "resources-finalizer.argocd.argoproj.io/background"
)

// ftArgs are the arguments of the scan every scenario compares.
func ftArgs() []string {
	return []string{"-n", ftNamespace, "--checks", "stuck-terminating", "--min-age", "0s", "-o", "json"}
}

// ftFindings is what a report found: each finding's ID and root cause, sorted.
func ftFindings(r *report.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.ID+" "+f.RootCause.ID+" "+f.Object.Name)
	}
	slices.Sort(out)
	return out
}

func TestScanAndFixThroughFaults(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	c := testcluster.Start(t, testcluster.Options{})
	cs := c.Clientset()
	fixNamespace(t, cs, ftNamespace)
	var pods []types.UID
	for i := range 9 {
		pods = append(pods, fixTerminatingPod(t, cs, ftNamespace, fmt.Sprintf("web-%d", i), ftFinalizer).UID)
	}
	proxy := c.StartFaultProxy(t, ftNamespace)

	direct := pluginOn(c.Kubeconfig).scan(t, ftArgs()...)
	stderr, wantCode := direct.stderr, direct.code
	base := direct.report()
	if wantCode != 2 || len(base.Findings) != 9 || !base.Coverage.Complete {
		t.Fatalf("scan without faults: exit %d, %d findings, coverage %+v; want 2, 9, complete\n%s", wantCode, len(base.Findings), base.Coverage, stderr)
	}
	// Through the proxy with no rule: the same report.
	sameScan := func(t *testing.T) (*report.Report, string, time.Duration) {
		t.Helper()
		scanned := pluginOn(proxy.Kubeconfig).scan(t, ftArgs()...)
		stderr, code, took := scanned.stderr, scanned.code, scanned.took
		r := scanned.report()
		if code != wantCode || !slices.Equal(ftFindings(r), ftFindings(base)) {
			t.Fatalf("exit %d, findings\n%s\nwant exit %d and\n%s\nstderr:\n%s", code, strings.Join(ftFindings(r), "\n"), wantCode,
				strings.Join(ftFindings(base), "\n"), stderr)
		}
		return r, stderr, took
	}
	sameScan(t)

	podList := regexp.MustCompile("^/api/v1/namespaces/" + ftNamespace + "/pods$")
	events := regexp.MustCompile("^/api/v1/namespaces/" + ftNamespace + "/events$")
	ridden := []struct {
		name string
		rule testcluster.FaultRule
	}{
		{"500 once on the pod list", testcluster.FaultRule{Method: "GET", Path: podList, Fault: testcluster.Status, Code: 500, Times: 1}},
		{"pod list body cut short once", testcluster.FaultRule{Method: "GET", Path: podList, Fault: testcluster.CutBody, CutAfter: 300, Times: 1}},
		{"503 with Retry-After 1 once", testcluster.FaultRule{Method: "GET", Path: podList, Fault: testcluster.Status, Code: 503, RetryAfter: 1, Times: 1}},
		{"connection reset before an answer on a read", testcluster.FaultRule{Method: "GET", Path: podList, Fault: testcluster.Reset, Times: 1}},
	}
	for _, tc := range ridden {
		t.Run(tc.name, func(t *testing.T) {
			rule := tc.rule
			proxy.Set(&rule)
			defer proxy.Set()
			r, _, _ := sameScan(t)
			if !r.Coverage.Complete || proxy.Hits(&rule) != 1 {
				t.Errorf("coverage %+v, fault injected %d times; want complete, once", r.Coverage, proxy.Hits(&rule))
			}
		})
	}

	t.Run("429 with Retry-After 1 twice", func(t *testing.T) {
		rule := testcluster.FaultRule{Method: "GET", Path: podList, Fault: testcluster.Status, Code: 429, RetryAfter: 1, Times: 2}
		clean := pluginOn(proxy.Kubeconfig).scan(t, ftArgs()...).took
		proxy.Set(&rule)
		defer proxy.Set()
		_, _, took := sameScan(t)
		// Measured, not asserted: the wall time against the waits the server asked for.
		t.Logf("scan under two 429s with Retry-After 1: %s; without faults %s; the Retry-After waits sum to 2s",
			took.Round(time.Millisecond), clean.Round(time.Millisecond))
	})

	t.Run("persistent 500 on pods: exit 1, the report printed, one line on stderr", func(t *testing.T) {
		proxy.Set(&testcluster.FaultRule{Method: "GET", Path: podList, Fault: testcluster.Status, Code: 500})
		defer proxy.Set()
		scanned := pluginOn(proxy.Kubeconfig).scan(t, ftArgs()...)
		stderr, code := scanned.stderr, scanned.code
		r := scanned.report()
		if code != 1 || len(r.Coverage.Unread) != 1 || r.Coverage.Unread[0].Input != "pods" || !strings.Contains(r.Coverage.Unread[0].Reason, "list pods") {
			t.Errorf("exit %d, coverage %+v; want 1 and pods unread", code, r.Coverage)
		}
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "could not read pods") {
			t.Errorf("stderr, want one line naming pods:\n%s", stderr)
		}
		t.Logf("stderr: %s", strings.TrimSpace(stderr))
	})

	t.Run("persistent 500 on events: degraded, same detection", func(t *testing.T) {
		proxy.Set(&testcluster.FaultRule{Method: "GET", Path: events, Fault: testcluster.Status, Code: 500})
		defer proxy.Set()
		r, _, _ := sameScan(t)
		if len(r.Coverage.Degraded) != 1 || !strings.Contains(r.Coverage.Degraded[0].Reason, "list events") || len(r.Coverage.Unread) != 0 {
			t.Errorf("coverage %+v, want stuck-terminating degraded by the events only", r.Coverage)
		}
	})

	t.Run("another writer inside the fix's read-write window: refused, nothing else changed", func(t *testing.T) {
		ns := fixNamespace(t, cs, "faults-race")
		pod := fixTerminatingPod(t, cs, ns, "web-0", ftFinalizer)
		// Right before the plugin's patch reaches the apiserver, someone labels the pod.
		proxy.Set(&testcluster.FaultRule{Method: "PATCH", Path: regexp.MustCompile("^/api/v1/namespaces/" + ns + "/pods/web-0$"),
			Fault: testcluster.Before, Times: 1, Hook: func() {
				if _, err := cs.CoreV1().Pods(ns).Patch(t.Context(), "web-0", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`),
					metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
					t.Errorf("the other writer: %v", err)
				}
			}})
		defer proxy.Set()
		stdout, stderr, code := pluginOn(proxy.Kubeconfig).fix(t, "-n", ns, "--checks", "stuck-terminating", "--min-age", "0s", "--yes", "-o", "json").out()
		d := ftFixDoc(t, stdout, stderr)
		if code != 3 || len(d.Results) != 1 || d.Results[0].Status != fix.StatusRefused || d.Results[0].AnswerLost {
			t.Fatalf("fix: exit %d, results %+v; want 3 and one refused\n%s", code, d.Results, stderr)
		}
		t.Logf("result: %s: %s", d.Results[0].Status, d.Results[0].Reason)
		after := fixGetPod(t, cs, ns, "web-0")
		if !slices.Equal(after.Finalizers, pod.Finalizers) || after.Labels["touched"] != "yes" || after.Labels["app"] != "web" || len(after.Labels) != 2 {
			t.Errorf("pod after the refused fix: finalizers %v, labels %v; want the finalizers kept and only the other writer's label added", after.Finalizers, after.Labels)
		}
		if evs := fixEvents(t, cs, ns, pod.UID); len(evs) != 0 {
			t.Errorf("events recorded for a refused write: %+v", evs)
		}
	})

	t.Run("fix whose write never reached the apiserver: read back, sent once more", func(t *testing.T) {
		ns := fixNamespace(t, cs, "faults-resend")
		pod := fixTerminatingPod(t, cs, ns, "web-0", ftFinalizer)
		// The connection drops before the patch is forwarded: the read-back finds the pod
		// unchanged, and the guarded patch is sent again.
		rule := testcluster.FaultRule{Method: "PATCH", Path: regexp.MustCompile("^/api/v1/namespaces/" + ns + "/pods/web-0$"), Fault: testcluster.Reset, Times: 1}
		proxy.Set(&rule)
		defer proxy.Set()
		stdout, stderr, code := pluginOn(proxy.Kubeconfig).fix(t, "-n", ns, "--checks", "stuck-terminating", "--min-age", "0s", "--yes", "-o", "json").out()
		d := ftFixDoc(t, stdout, stderr)
		if code != 0 || len(d.Results) != 1 || d.Results[0].Status != fix.StatusApplied || !d.Results[0].AnswerLost ||
			!strings.Contains(d.Results[0].Reason, "sent once more") || proxy.Hits(&rule) != 1 {
			t.Fatalf("fix: exit %d, results %+v, %d resets; want 0, applied after sending once more, 1\n%s", code, d.Results, proxy.Hits(&rule), stderr)
		}
		t.Logf("result: %s: %s", d.Results[0].Status, d.Results[0].Reason)
		if p, err := cs.CoreV1().Pods(ns).Get(t.Context(), "web-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) && (err != nil || p.UID == pod.UID) {
			t.Errorf("pod after the fix: %v, finalizers %v", err, p.Finalizers)
		}
	})

	// The Event that records a fix has a generated name: a lost answer is read back, so the fix
	// leaves exactly one record whether the create landed (LoseAnswer) or never arrived (Reset).
	for _, fault := range []struct {
		name  string
		fault testcluster.Fault
	}{{"lost", testcluster.LoseAnswer}, {"reset", testcluster.Reset}} {
		t.Run("the answer to the fix's Event create "+fault.name+": one Event", func(t *testing.T) {
			ns := fixNamespace(t, cs, "faults-event-"+fault.name)
			pod := fixTerminatingPod(t, cs, ns, "web-0", ftFinalizer)
			rule := testcluster.FaultRule{Method: "POST", Path: regexp.MustCompile("^/api/v1/namespaces/" + ns + "/events$"), Fault: fault.fault, Times: 1}
			proxy.Set(&rule)
			defer proxy.Set()
			stdout, stderr, code := pluginOn(proxy.Kubeconfig).fix(t, "-n", ns, "--checks", "stuck-terminating", "--min-age", "0s", "--yes", "-o", "json").out()
			d := ftFixDoc(t, stdout, stderr)
			if code != 0 || len(d.Results) != 1 || d.Results[0].Status != fix.StatusApplied || proxy.Hits(&rule) != 1 {
				t.Fatalf("fix: exit %d, results %+v, %d faults; want 0, applied, 1\n%s", code, d.Results, proxy.Hits(&rule), stderr)
			}
			if strings.Contains(stderr, "could not record an Event") {
				t.Errorf("stderr: %s", stderr)
			}
			if evs := fixEvents(t, cs, ns, pod.UID); len(evs) != 1 {
				t.Errorf("%d Events recorded for one fix, want 1: %+v", len(evs), evs)
			}
		})
	}

	t.Run("fix with every answer lost after the write", func(t *testing.T) {
		pod := regexp.MustCompile("^/api/v1/namespaces/" + ftNamespace + "/pods/[^/]+$")
		rule := testcluster.FaultRule{Method: "PATCH", Path: pod, Fault: testcluster.LoseAnswer}
		// The reads before the writes ride out a few 500s too.
		reads := testcluster.FaultRule{Method: "GET", Path: pod, Fault: testcluster.Status, Code: 500, Times: 3}
		proxy.Set(&rule, &reads)
		defer proxy.Set()
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		stdout, stderr, code := pluginOn(proxy.Kubeconfig).fix(t, "-n", ftNamespace, "--checks", "stuck-terminating", "--min-age", "0s",
			"--yes", "-o", "json", "--audit-file", audit).out()
		d := ftFixDoc(t, stdout, stderr)
		if code != 0 || len(d.Results) != 9 || proxy.Hits(&rule) != 9 || proxy.Hits(&reads) != 3 {
			t.Fatalf("fix: exit %d, %d results, %d answers lost, %d reads failed; want 0, 9, 9, 3\n%s\n%s", code, len(d.Results),
				proxy.Hits(&rule), proxy.Hits(&reads), stdout, stderr)
		}
		t.Logf("first result: %s: %s", d.Results[0].Status, d.Results[0].Reason)
		for _, r := range d.Results {
			if r.Status != fix.StatusApplied || !r.AnswerLost || !strings.Contains(r.Reason, "the answer to the patch was lost") || !r.Verified {
				t.Errorf("result %s: %s (answerLost %v, verified %v): %s", r.Object.Name, r.Status, r.AnswerLost, r.Verified, r.Reason)
			}
		}
		data, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		for _, l := range lines {
			var rec fix.AuditRecord
			if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Result != fix.StatusApplied || !rec.AnswerLost || !strings.Contains(rec.Reason, "answer to the patch was lost") {
				t.Errorf("audit line %s (%v); want applied with the answer lost", l, err)
			}
		}
		if len(lines) != 9 {
			t.Errorf("%d audit lines, want 9", len(lines))
		}
		// What the tool says is what the cluster shows: every finalizer is gone, and so are the pods.
		for i, uid := range pods {
			p, err := cs.CoreV1().Pods(ftNamespace).Get(t.Context(), fmt.Sprintf("web-%d", i), metav1.GetOptions{})
			if !apierrors.IsNotFound(err) && (err != nil || p.UID == uid) {
				t.Errorf("pod web-%d after the fix: %v, finalizers %v", i, err, p.Finalizers)
			}
		}
	})
}

func ftFixDoc(t *testing.T, stdout, stderr string) fix.Document {
	t.Helper()
	var d fix.Document
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("fix -o json is not a result document: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return d
}
