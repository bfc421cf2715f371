package fix

import (
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestPlanChanges(t *testing.T) {
	web := report.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "u-web"}
	api := report.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api", UID: "u-api"}
	db := report.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "shop", Name: "db", UID: "u-db"}
	group := func(ref report.ObjectRef, replicas, maxUnavailable int32, pdbs ...PDB) *Group {
		return &Group{Budget: Budget{Workload: ref, Replicas: replicas, MaxUnavailable: maxUnavailable, Source: "spec"}, PDBs: pdbs}
	}
	shown := &Plan{Groups: []*Group{
		group(web, 4, 1, PDB{Name: "web", DisruptionsAllowed: 1}),
		group(api, 3, 1),
		group(db, 3, 1),
	}}
	scaled := group(api, 1, 1)
	scaled.Refusal = "one replica"
	fresh := &Plan{Groups: []*Group{
		// Only the disruptions allowed moved: each wave reads them again, not a change of plan.
		group(web, 4, 1, PDB{Name: "web", DisruptionsAllowed: 0}),
		scaled,
	}}
	got := shown.Changes(fresh)
	if len(got) != 2 {
		t.Fatalf("changes = %+v, want api changed and db gone", got)
	}
	if got[0].Before != shown.Groups[1] || got[0].After != scaled {
		t.Errorf("first change = %+v, want api before and after", got[0])
	}
	if got[1].Before != shown.Groups[2] || got[1].After != nil {
		t.Errorf("second change = %+v, want db gone", got[1])
	}
	if c := shown.Changes(shown); len(c) != 0 {
		t.Errorf("a plan compared with itself changed: %+v", c)
	}
	added := &Plan{Groups: append([]*Group{group(report.ObjectRef{Kind: "DaemonSet", Name: "agent", UID: "u-agent"}, 5, 1)}, shown.Groups...)}
	if c := shown.Changes(added); len(c) != 1 || c[0].Before != nil || c[0].After != added.Groups[0] {
		t.Errorf("a workload the refresh adds: %+v", c)
	}
}
