package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
)

// replica is one audit process behind its own fault proxy, which counts its report writes.
type replica struct {
	name       string
	proxy      *testcluster.FaultProxy
	patch, del *testcluster.FaultRule
	p          *auditProc
}

var reportPath = regexp.MustCompile(`^/apis/openreports\.io/`)

func startReplica(t *testing.T, c *testcluster.Cluster, name string) *replica {
	t.Helper()
	r := &replica{name: name, proxy: c.StartFaultProxy(t, "le-system"),
		patch: &testcluster.FaultRule{Method: "PATCH", Path: reportPath, Fault: testcluster.Before, Hook: func() {}},
		del:   &testcluster.FaultRule{Method: "DELETE", Path: reportPath, Fault: testcluster.Before, Hook: func() {}}}
	r.connect()
	r.p = startAudit(t, r.proxy.Kubeconfig, "-A", "--checks", teCheck, "--min-age", "0s", "--interval", "2s",
		"--leader-elect", "--leader-election-lease-duration", "4s")
	return r
}

// connect lets every request through, counting the report writes.
func (r *replica) connect() { r.proxy.Set(r.patch, r.del) }

// cut makes the apiserver unreachable for this replica.
func (r *replica) cut() {
	r.proxy.Set(&testcluster.FaultRule{Path: regexp.MustCompile(`.`), Fault: testcluster.Reset})
}

func (r *replica) writes() (patches, deletes int) { return r.proxy.Hits(r.patch), r.proxy.Hits(r.del) }

func (r *replica) waitLeader(t *testing.T, want bool) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%s leading=%v", r.name, want), func(context.Context) (bool, error) {
		return r.p.scrape(t).leader() == want, nil
	})
}

// TestAuditLeaderElection: two replicas, one writes; the standby scans and serves its own
// metrics, takes over when the leader is killed, and a replica cut off longer than the lease
// stops writing, keeps running and wins the Lease again later.
func TestAuditLeaderElection(t *testing.T) {
	t.Parallel()
	const ns = "le"
	c := testcluster.Start(t, testcluster.Options{})
	installReportCRDs(t, c)
	createNamespace(t, c, ns)
	createNamespace(t, c, "le-system")
	cs := c.Clientset()

	a := startReplica(t, c, "a")
	a.waitLeader(t, true)
	b := startReplica(t, c, "b")

	heldConfigMap(t, cs, ns)
	hasFinding := func(s scrape) bool { return len(s.series("workloaddoctor_findings", `namespace="le"`)) == 1 }
	a.p.withinCycles(t, 2, "success", "a's finding", hasFinding)
	b.p.withinCycles(t, 2, "success", "b's finding (the standby scans too)", hasFinding)
	// Two more of b's cycles with the finding in view: a standby that wrote would have by then.
	bs := b.p.scrape(t).scans("success")
	b.p.withinCycles(t, 1000, "success", "two more cycles of b", func(s scrape) bool { return s.scans("success") >= bs+2 })
	if auditReport(t, c, audit.OpenReports, ns) == nil {
		t.Fatal("the leader wrote no report")
	}
	if p, d := a.writes(); p == 0 || d != 0 {
		t.Errorf("leader a: %d report patches, %d deletes; want some patches", p, d)
	}
	if p, d := b.writes(); p+d != 0 || b.p.scrape(t).leader() {
		t.Errorf("standby b wrote %d patches and %d deletes, or claims to lead", p, d)
	}

	// The leader dies without releasing the Lease: b takes over within the lease and writes.
	a.p.kill(t)
	b.waitLeader(t, true)
	releaseConfigMap(t, cs, ns)
	b.p.withinCycles(t, 2, "success", "b to delete the resolved report", func(scrape) bool {
		return auditReport(t, c, audit.OpenReports, ns) == nil
	})
	if _, d := b.writes(); d == 0 {
		t.Errorf("the report is gone but b sent no delete")
	}

	// b cut off longer than the lease: c takes over; b stops leading but keeps running, and
	// wins the Lease back once c is gone.
	c2 := startReplica(t, c, "c")
	b.cut()
	b.waitLeader(t, false)
	c2.waitLeader(t, true)
	b.connect()
	bs = b.p.scrape(t).scans("success")
	b.p.withinCycles(t, 1000, "success", "b scanning again", func(s scrape) bool { return s.scans("success") >= bs+2 })
	if b.p.scrape(t).leader() {
		t.Errorf("b leads while c holds the Lease")
	}
	c2.p.kill(t)
	b.waitLeader(t, true)
	if got := strings.Join(b.p.log(), "\n"); strings.Count(got, "not leading") < 1 || strings.Count(got, `"msg":"leading`) < 2 {
		t.Errorf("b's log does not show leading, losing and leading again:\n%s", got)
	}
}
