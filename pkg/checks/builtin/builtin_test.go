package builtin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
)

func TestBuiltinChecksAreDocumented(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range builtin.Checks().All() {
		info := c.Info()
		if info.ID == "" || info.Title == "" || info.Description == "" || info.Threshold <= 0 || len(info.Needs) == 0 {
			t.Errorf("check %q is missing its ID, title, description, threshold or inputs", info.ID)
		}
		if ids[info.ID] {
			t.Errorf("check %q registered twice", info.ID)
		}
		ids[info.ID] = true
		for _, rc := range info.RootCauses {
			if rc.Title == "" || rc.Description == "" || rc.Severity.Rank() == 0 {
				t.Errorf("%s/%s lacks a title, description or severity", info.ID, rc.ID)
			}
			for _, a := range rc.Actions {
				if _, ok := fix.NewCatalog().Lookup(a); !ok {
					t.Errorf("%s/%s offers unknown action %q", info.ID, rc.ID, a)
				}
			}
		}
	}
}

// TestContractRootCauses keeps the registry in step with docs/contract.md: every check and root-cause
// ID a runbook may depend on is registered.
func TestContractRootCauses(t *testing.T) {
	contract := map[string][]string{
		"stuck-preparing-normal": {"prenormal-hook-pending", "prenormal-event-dropped", "prenormal-reconcile-missed",
			"pod-not-scheduled", "ondelete-refresh-bug", "controller-unavailable", "workload-expectations-blocked"},
		"expectations-unsatisfied": {"scale-expectations-leaked", "update-expectations-leaked", "controller-unavailable",
			"pod-creation-failing", "stalled-unknown"},
		"stuck-terminating": {"finalizer-owner-missing", "finalizer-owner-not-acting", "kruise-predelete-hook-pending",
			"kwok-stage-not-run", "node-missing", "node-not-ready", "kubelet-kill-failing", "owner-paused",
			"finalizer-readd-race", "namespace-content-remaining", "namespace-discovery-failed",
			"protected-resource-in-use", "dependents-remaining", "kruise-hook-bypassed"},
		"resize-policy-drift": {"kruise-drops-resize-policy", "resize-policy-immutable", "sidecar-resize-policy-drift", "benign-defaulting"},
		"rollout-stalled": {"inplace-update-hook-pending", "pods-unschedulable", "image-pull-failing", "inplace-resize-pending",
			"inplace-daemon-missing", "inplace-update-incomplete", "crash-looping", "blocked-by-stuck-pod", "pods-not-ready",
			"progress-deadline-exceeded", "sidecarset-update-in-flight", "sidecarset-update-stalled"},
	}
	reg := builtin.Checks()
	for id, causes := range contract {
		c, ok := reg.Get(id)
		if !ok {
			t.Errorf("check %s of the contract is not registered", id)
			continue
		}
		have := map[string]bool{}
		for _, rc := range c.Info().RootCauses {
			have[rc.ID] = true
		}
		for _, rc := range causes {
			if !have[rc] {
				t.Errorf("check %s lacks root cause %s of the contract", id, rc)
			}
		}
	}
	for _, a := range []string{checks.ActionRequeueWorkload, checks.ActionRestartControllerLeader, checks.ActionRemoveFinalizer, checks.ActionForceDelete, checks.ActionEvictPod} {
		if _, ok := fix.NewCatalog().Lookup(a); !ok {
			t.Errorf("action %s of the contract is not documented", a)
		}
	}
}

// TestFixesAmongRootCauseActions runs every check on the benchmark's cluster (dead nodes, pods
// stuck on them, CloneSets) and holds each finding to its root cause's table: NewFinding drops a
// fix the root cause does not offer and raises the finding to an error, so none may be proposed.
func TestFixesAmongRootCauseActions(t *testing.T) {
	reg := builtin.Checks()
	findings, _ := checks.Run(syntheticSnapshot(t, 4000), reg.All(), -1)
	if len(findings) == 0 {
		t.Fatal("no findings: the cluster exercises no check")
	}
	for _, f := range findings {
		c, _ := reg.Get(f.Check)
		i := slices.IndexFunc(c.Info().RootCauses, func(rc checks.RootCause) bool { return rc.ID == f.RootCause.ID })
		if i < 0 {
			t.Errorf("%s: root cause %s/%s is not in the check's table", f.ID, f.Check, f.RootCause.ID)
			continue
		}
		for _, fx := range f.Fixes {
			if !slices.Contains(c.Info().RootCauses[i].Actions, fx.Action) {
				t.Errorf("%s: %s/%s proposes %s, not among its actions", f.ID, f.Check, f.RootCause.ID, fx.Action)
			}
		}
		for _, e := range f.RootCause.Evidence {
			if strings.Contains(e, "dropped: root cause") {
				t.Errorf("%s: %s", f.ID, e)
			}
		}
	}
}

// TestRootCauseAttributes: fix may force-delete, and a report folds by node, exactly the findings
// of the root causes docs/contract.md names: a pod whose node is gone or NotReady.
func TestRootCauseAttributes(t *testing.T) {
	reg := builtin.Checks()
	want := "node-missing,node-not-ready"
	if got := strings.Join(reg.RootCauseIDs(func(rc checks.RootCause) bool { return rc.Offers(checks.ActionForceDelete) }), ","); got != want {
		t.Errorf("root causes offering force-delete: %s, want %s", got, want)
	}
	if got := strings.Join(reg.RootCauseIDs(func(rc checks.RootCause) bool { return rc.NodeProblem }), ","); got != want {
		t.Errorf("node root causes: %s, want %s", got, want)
	}
}
