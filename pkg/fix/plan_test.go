package fix

import (
	"reflect"
	"strings"
	"testing"

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
			steps, refused := Select(NewCatalog(), all, tc.sel)
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
			steps, refused := Select(NewCatalog(), []report.Finding{tc.f}, Selection{})
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
	steps, refused := Select(NewCatalog(), []report.Finding{f, g}, Selection{})
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
	steps, _ = Select(NewCatalog(), []report.Finding{p}, Selection{})
	if len(steps) != 1 || steps[0].Target != *p.Owner || steps[0].Risk != report.RiskLow {
		t.Fatalf("requeue step = %+v, want the owner with the fix's risk", steps)
	}
}
