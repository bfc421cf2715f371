package fix

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func pod(ns, name, uid, rv string) report.ObjectRef {
	return report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: uid, ResourceVersion: rv}
}

func finding(id, check, rootCause string, obj report.ObjectRef, fixes ...report.Fix) report.Finding {
	return report.Finding{ID: id, Check: check, Object: obj, RootCause: report.RootCause{ID: rootCause}, Fixes: fixes}
}

func rmFin(name string) report.Fix {
	return report.Fix{Action: "remove-finalizer", Risk: report.RiskLow, Params: map[string]string{"finalizer": name}}
}

var (
	forceFix   = report.Fix{Action: "force-delete", Risk: report.RiskHigh}
	requeueFix = report.Fix{Action: "requeue-workload", Risk: report.RiskLow}
	evictFix   = report.Fix{Action: "evict-pod"}
)

func restartFix(holder string) report.Fix {
	return report.Fix{Action: "restart-controller-leader", Params: map[string]string{
		"leaseNamespace": "kruise-system", "leaseName": "kruise-manager", "holderIdentity": holder}}
}

func stepSummary(steps []*Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Action+" "+s.Target.String()+" "+s.Params["finalizer"]+" "+strings.Join(s.FindingIDs(), ","))
	}
	return out
}

func TestPlanSelection(t *testing.T) {
	cloneSet := &report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web", UID: "cs-1"}
	fA := finding("wd-a", "stuck-terminating", "finalizer-owner-missing", pod("shop", "a", "ua", "10"), rmFin("example.com/x"), forceFix)
	fB := finding("wd-b", "stuck-terminating", "node-missing", pod("shop", "b", "ub", "11"), forceFix, rmFin("example.com/y"))
	fC := finding("wd-c", "stuck-preparing-normal", "prenormal-event-dropped", pod("shop", "c", "uc", "12"), requeueFix)
	fC.Owner = cloneSet
	fD := finding("wd-d", "stuck-preparing-normal", "prenormal-event-dropped", pod("shop", "d", "ud", "13"), requeueFix)
	fD.Owner = cloneSet
	fE := finding("wd-e", "stuck-terminating", "finalizer-owner-missing", pod("shop", "e", "ue", "14"), rmFin("example.com/p"), rmFin("example.com/q"))
	fNone := finding("wd-n", "resize-policy-drift", "benign-defaulting", pod("shop", "n", "un", "15"))
	all := []report.Finding{fA, fB, fC, fD, fE, fNone}

	tests := []struct {
		name        string
		sel         Selection
		wantSteps   []string
		wantRefused []string // finding IDs
	}{
		{name: "every finding with a fix, default actions; requeue of one CloneSet once; both finalizers",
			sel: Selection{},
			wantSteps: []string{
				"remove-finalizer shop/pod/a example.com/x wd-a",
				"force-delete shop/pod/b  wd-b",
				"requeue-workload shop/cloneset/web  wd-c,wd-d",
				"remove-finalizer shop/pod/e example.com/p wd-e",
				"remove-finalizer shop/pod/e example.com/q wd-e",
			}},
		{name: "by ID", sel: Selection{IDs: []string{"wd-b"}},
			wantSteps: []string{"force-delete shop/pod/b  wd-b"}},
		{name: "--action picks another action of a named finding", sel: Selection{IDs: []string{"wd-b"}, Action: "remove-finalizer"},
			wantSteps: []string{"remove-finalizer shop/pod/b example.com/y wd-b"}},
		{name: "--action over all findings keeps those offering it", sel: Selection{Action: "force-delete"},
			// wd-a offers force-delete but its root cause does not allow it: refused, not guessed.
			wantSteps:   []string{"force-delete shop/pod/b  wd-b"},
			wantRefused: []string{"wd-a"}},
		{name: "--check", sel: Selection{Check: "stuck-preparing-normal"},
			wantSteps: []string{"requeue-workload shop/cloneset/web  wd-c,wd-d"}},
		{name: "named finding without fix, unknown ID, action not offered, other check",
			sel:         Selection{IDs: []string{"wd-n", "wd-zzz", "wd-c"}, Action: "evict-pod"},
			wantRefused: []string{"wd-c", "wd-n", "wd-zzz"}},
		{name: "named finding of another check", sel: Selection{IDs: []string{"wd-a"}, Check: "resize-policy-drift"},
			wantRefused: []string{"wd-a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, refused := Plan(all, tc.sel)
			if got := stepSummary(steps); !reflect.DeepEqual(got, tc.wantSteps) {
				t.Errorf("steps:\n got %q\nwant %q", got, tc.wantSteps)
			}
			var ids []string
			for _, r := range refused {
				if r.Status != StatusRefused || r.Reason == "" {
					t.Errorf("unplanned result %+v: want refused with a reason", r)
				}
				ids = append(ids, r.Findings...)
			}
			if !reflect.DeepEqual(ids, tc.wantRefused) {
				t.Errorf("refused findings = %q, want %q (%+v)", ids, tc.wantRefused, refused)
			}
		})
	}
}

func TestPlanRefusesFixesThatCannotBeAppliedAsProposed(t *testing.T) {
	cm := report.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c", UID: "u", ResourceVersion: "1"}
	tests := []struct {
		name string
		f    report.Finding
		want string
	}{
		{"remove-finalizer without a name", finding("wd-1", "c", "r", cm, report.Fix{Action: "remove-finalizer"}), "names no finalizer"},
		{"remove-finalizer without resourceVersion", finding("wd-1", "c", "r", pod("ns", "p", "u", ""), rmFin("x")), "scan again"},
		{"force-delete for a root cause other than node-missing/node-not-ready", finding("wd-1", "c", "finalizer-owner-missing", pod("ns", "p", "u", "1"), forceFix), "only to node-missing or node-not-ready"},
		{"force-delete of a ConfigMap", finding("wd-1", "c", "node-missing", cm, forceFix), "acts on pods"},
		{"evict of a ConfigMap", finding("wd-1", "c", "r", cm, evictFix), "acts on pods"},
		{"requeue without uid", finding("wd-1", "c", "r", report.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "d"}, requeueFix), "uid"},
		{"restart without holder", finding("wd-1", "c", "r", cm, report.Fix{Action: "restart-controller-leader", Params: map[string]string{"leaseNamespace": "a", "leaseName": "b"}}), "holderIdentity"},
		{"unknown action", finding("wd-1", "c", "r", cm, report.Fix{Action: "reboot-cluster"}), "unknown action"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, refused := Plan([]report.Finding{tc.f}, Selection{})
			if len(steps) != 0 {
				t.Errorf("planned %q, want nothing", stepSummary(steps))
			}
			if len(refused) != 1 || !strings.Contains(refused[0].Reason, tc.want) {
				t.Fatalf("refused = %+v, want one with %q", refused, tc.want)
			}
		})
	}
}

func TestPlanStepDetails(t *testing.T) {
	f := finding("wd-r", "expectations-unsatisfied", "scale-expectations-leaked",
		report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web", UID: "u", ResourceVersion: "5"},
		restartFix("kruise-controller-manager-7d9f8-abcde_1b2c3d4e-0000-1111-2222-333344445555"))
	g := f
	g.ID, g.Object.Name, g.Object.UID = "wd-s", "api", "u2"
	steps, refused := Plan([]report.Finding{f, g}, Selection{})
	if len(refused) != 0 || len(steps) != 1 {
		t.Fatalf("steps %q refused %+v: want one step for one leader", stepSummary(steps), refused)
	}
	s := steps[0]
	want := report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "kruise-system", Name: "kruise-controller-manager-7d9f8-abcde"}
	if s.Target != want {
		t.Errorf("target = %+v, want %+v", s.Target, want)
	}
	if s.Risk != report.RiskMedium {
		t.Errorf("risk = %q, want the action's default medium when the fix states none", s.Risk)
	}
	if got := s.FindingIDs(); !reflect.DeepEqual(got, []string{"wd-r", "wd-s"}) {
		t.Errorf("findings = %v", got)
	}
	if !strings.Contains(s.Change, "kruise-system/pod/kruise-controller-manager-7d9f8-abcde") || !strings.Contains(s.Change, "kruise-system/kruise-manager") {
		t.Errorf("change %q does not name the pod and the Lease", s.Change)
	}

	// The plan of a requeue names the owner, and drops the finding object's resourceVersion.
	p := finding("wd-p", "stuck-preparing-normal", "prenormal-event-dropped", pod("shop", "web-1", "pu", "9"), requeueFix)
	p.Owner = &report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web", UID: "cu"}
	steps, _ = Plan([]report.Finding{p}, Selection{})
	if len(steps) != 1 || steps[0].Target != *p.Owner || steps[0].Risk != report.RiskLow {
		t.Fatalf("requeue step = %+v, want the owner with the fix's risk", steps)
	}
}

func TestJudge(t *testing.T) {
	obj := pod("shop", "a", "ua", "10")
	planned := finding("wd-a", "stuck-terminating", "finalizer-owner-missing", obj, rmFin("example.com/x"), rmFin("example.com/y"))
	step := func() *Step {
		steps, _ := Plan([]report.Finding{planned}, Selection{})
		return steps[0] // remove example.com/x
	}
	withRV := func(f report.Finding, rv string) report.Finding {
		f.Object.ResourceVersion = rv
		return f
	}
	rep := func(fs ...report.Finding) *report.Report {
		return &report.Report{Findings: fs, Coverage: report.Coverage{Checks: []string{"stuck-terminating"}}}
	}
	other := finding("wd-other", "stuck-terminating", "node-missing", obj, forceFix)
	plan := func(r report.ObjectRef) string { return r.ResourceVersion }

	tests := []struct {
		name     string
		fresh    *report.Report
		expectRV func(report.ObjectRef) string
		want     Status
		reason   string
	}{
		{"still true and unchanged: go ahead", rep(planned), plan, "", ""},
		{"gone: already resolved", rep(), plan, StatusAlreadyResolved, "no longer reported"},
		{"fix no longer proposed (finalizer removed by someone else): already resolved",
			rep(withFixes(withRV(planned, "11"), rmFin("example.com/y"))), plan, StatusAlreadyResolved, "no longer proposes remove-finalizer example.com/x"},
		{"resourceVersion bumped: refused", rep(withRV(planned, "11")), plan, StatusRefused, "resourceVersion 11, the plan saw 10"},
		{"bumped by this run's own write: go ahead", rep(withRV(planned, "11")), func(report.ObjectRef) string { return "11" }, "", ""},
		{"object now has another diagnosis: refused", rep(other), plan, StatusRefused, "now diagnosed as node-missing"},
		{"check skipped: failed", &report.Report{Coverage: report.Coverage{Skipped: []report.Note{{Check: "stuck-terminating", Reason: "forbidden: list pods"}}}},
			plan, StatusFailed, "forbidden: list pods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := judge(step(), newView(tc.fresh), tc.expectRV)
			if got != tc.want || !strings.Contains(reason, tc.reason) {
				t.Errorf("judge = %q %q, want %q containing %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

func withFixes(f report.Finding, fixes ...report.Fix) report.Finding {
	f.Fixes = fixes
	return f
}

func TestJudgeSharedStep(t *testing.T) {
	owner := &report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web", UID: "cs"}
	fC := finding("wd-c", "stuck-preparing-normal", "prenormal-event-dropped", pod("shop", "c", "uc", "1"), requeueFix)
	fD := finding("wd-d", "stuck-preparing-normal", "prenormal-event-dropped", pod("shop", "d", "ud", "2"), requeueFix)
	fC.Owner, fD.Owner = owner, owner
	steps, _ := Plan([]report.Finding{fC, fD}, Selection{})
	if len(steps) != 1 {
		t.Fatalf("want one shared step, got %q", stepSummary(steps))
	}
	plan := func(r report.ObjectRef) string { return r.ResourceVersion }
	// One pod resolved, the other still stuck: the requeue still goes ahead.
	if got, reason := judge(steps[0], newView(&report.Report{Findings: []report.Finding{fD}}), plan); got != "" {
		t.Errorf("one of two still true: judge = %q %q, want go ahead", got, reason)
	}
	// Both resolved: nothing to do.
	if got, _ := judge(steps[0], newView(&report.Report{}), plan); got != StatusAlreadyResolved {
		t.Errorf("none still true: judge = %q, want already-resolved", got)
	}
	// One changed: refuse rather than act on an object nobody looked at.
	fD2 := fD
	fD2.Object.ResourceVersion = "3"
	if got, _ := judge(steps[0], newView(&report.Report{Findings: []report.Finding{fC, fD2}}), plan); got != StatusRefused {
		t.Errorf("one changed: judge = %q, want refused", got)
	}
}

func TestFinalizerPatch(t *testing.T) {
	b, err := finalizerPatch("uid-1", "42", 1, "example.com/cleanup")
	if err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": "uid-1"},
		{"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
		{"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/cleanup"},
		{"op": "remove", "path": "/metadata/finalizers/1"},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("patch = %s", b)
	}
}

func TestRequeuePatch(t *testing.T) {
	b, err := requeuePatch("uid-1", "2026-01-02T03:04:05.000000006Z")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"annotations":{"workloaddoctor.io/requeued-at":"2026-01-02T03:04:05.000000006Z"},"uid":"uid-1"}}`
	if string(b) != want {
		t.Errorf("patch = %s, want %s", b, want)
	}
}

func TestWriteErr(t *testing.T) {
	ref := pod("ns", "p", "u", "1")
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err  error
		want Status
	}{
		{apierrors.NewConflict(gr, "p", errors.New("the object has been modified")), StatusRefused},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), StatusRefused},
		{apierrors.NewGenericServerResponse(422, "patch", gr, "p", "testing value /metadata/resourceVersion failed", 0, false), StatusRefused},
		{apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0), StatusRefused},
		{apierrors.NewNotFound(gr, "p"), StatusAlreadyResolved},
		{apierrors.NewForbidden(gr, "p", errors.New("no")), StatusFailed},
		{errors.New("connection refused"), StatusFailed},
	}
	for _, tc := range tests {
		if got := writeErr("patch", ref, tc.err); got.Status != tc.want || got.Reason == "" {
			t.Errorf("writeErr(%v) = %+v, want %s", tc.err, got, tc.want)
		}
	}
}

func TestParseReport(t *testing.T) {
	good := `{"apiVersion":"workloaddoctor.io/v1alpha1","kind":"Report","metadata":{"generatedAt":"2026-01-01T00:00:00Z"},
"findings":[{"id":"wd-1","check":"stuck-terminating","severity":"error","object":{"apiVersion":"v1","kind":"Pod","namespace":"a","name":"p","uid":"u","resourceVersion":"7"},
"rootCause":{"id":"node-missing"},"fixes":[{"action":"force-delete","risk":"high"}]}]}`
	r, err := ParseReport([]byte(good), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Object.ResourceVersion != "7" || r.Summary.Total != 1 {
		t.Errorf("parsed %+v", r)
	}
	yamlDoc := "apiVersion: workloaddoctor.io/v1alpha1\nkind: Report\nfindings: []\n"
	if _, err := ParseReport([]byte(yamlDoc), "r.yaml"); err != nil {
		t.Errorf("yaml report: %v", err)
	}
	for name, doc := range map[string]string{
		"not json":           "{",
		"other kind":         `{"apiVersion":"v1","kind":"Pod"}`,
		"finding without id": `{"apiVersion":"workloaddoctor.io/v1alpha1","kind":"Report","findings":[{"check":"x","object":{"kind":"Pod","name":"p"}}]}`,
	} {
		if _, err := ParseReport([]byte(doc), name); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestResultsDocumentAndSummary(t *testing.T) {
	rs := []Result{{Status: StatusApplied}, {Status: StatusAlreadyResolved}, {Status: StatusDryRun}}
	if !AllOK(rs) {
		t.Error("applied, already-resolved and dry-run must exit 0")
	}
	rs = append(rs, Result{Status: StatusRefused}, Result{Status: StatusFailed})
	if AllOK(rs) {
		t.Error("refused or failed must exit 3")
	}
	doc := NewDocument(DocumentMeta{DryRun: DryRunNone}, rs)
	want := Summary{Total: 5, Applied: 1, AlreadyResolved: 1, Refused: 1, Failed: 1, DryRun: 1}
	if doc.Summary != want || doc.Kind != ResultKind || doc.APIVersion != report.APIVersion {
		t.Errorf("document = %+v", doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"findings":null`) {
		t.Errorf("findings must be [] not null: %s", b)
	}
}

func TestPrintPlanAndResults(t *testing.T) {
	f := finding("wd-a", "stuck-terminating", "finalizer-owner-missing", pod("shop", "a", "ua", "10"), rmFin("example.com/x"))
	f.Summary = "pod stuck Terminating"
	steps, refused := Plan([]report.Finding{f}, Selection{IDs: []string{"wd-a", "wd-gone"}})
	var buf bytes.Buffer
	PrintPlan(&buf, steps, refused)
	for _, want := range []string{"Plan: 1 action", "remove-finalizer pod/a -n shop (risk: low)", `remove finalizer "example.com/x"`,
		"resolves: wd-a (stuck-terminating/finalizer-owner-missing)", "Not planned (1)", "wd-gone: no finding with this ID"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	rs := append(PlannedResults(steps), refused...)
	if err := PrintResults(&buf, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ACTION", "remove-finalizer", "dry-run", "refused", "2 actions: 0 applied, 0 already resolved, 1 refused, 0 failed, 1 dry run."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("results lack %q:\n%s", want, buf.String())
		}
	}
}

func TestEventMessage(t *testing.T) {
	r := &Result{Action: "remove-finalizer", Status: StatusApplied, Reason: strings.Repeat("x", 2000), Findings: []string{"wd-1"}}
	if msg := eventMessage(r, "alice"); len(msg) > maxEventMessage || !strings.HasPrefix(msg, "kubectl-workloaddoctor fix remove-finalizer applied by alice: ") {
		t.Errorf("message (%d bytes) = %.80q", len(msg), msg)
	}
	if got := eventNameBase("Web-7"); got != "web-7." {
		t.Errorf("eventNameBase = %q", got)
	}
}

func TestParseDryRun(t *testing.T) {
	for in, want := range map[string]DryRun{"": DryRunNone, "none": DryRunNone, "client": DryRunClient, "server": DryRunServer} {
		if got, err := ParseDryRun(in); err != nil || got != want {
			t.Errorf("ParseDryRun(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseDryRun("true"); err == nil {
		t.Error("ParseDryRun(true): want an error")
	}
}
