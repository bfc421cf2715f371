package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/why"
)

// why runs `why args...`; a non-zero exit is for the caller to judge (wantExit).
func (p plugin) why(t testing.TB, args ...string) *pluginRun {
	t.Helper()
	return p.run(t, append([]string{"why"}, args...))
}

// whyType names an object's type the way a user may type it to why: its kind, qualified by its
// API group (deployment.apps, cloneset.apps.kruise.io), resolved by the RESTMapper.
func whyType(o report.ObjectRef) string {
	typ := strings.ToLower(o.Kind)
	if g, _, ok := strings.Cut(o.APIVersion, "/"); ok {
		typ += "." + g
	}
	return typ
}

// whyAgreesWithScan runs `why` on the object of f, a finding of the scan report rep, with flags
// (the scan's --checks, --min-age), and fails unless why reports that very finding: the same ID
// (so fix takes the ID why prints), check, severity, root cause, evidence, fixes and blockedBy,
// and every finding down its chain as rep has it. It returns why's document. Any scenario can
// call it on the findings it produced.
func whyAgreesWithScan(t *testing.T, p plugin, rep *report.Report, f report.Finding, flags ...string) *report.Report {
	t.Helper()
	args := append([]string{whyType(f.Object) + "/" + f.Object.Name, "-o", "json"}, flags...)
	if f.Object.Namespace != "" {
		args = append(args, "-n", f.Object.Namespace)
	}
	run := p.why(t, args...).wantExit(0, 2)
	var doc report.Report
	if err := json.Unmarshal([]byte(run.stdout), &doc); err != nil {
		t.Fatalf("why -o json is not a report: %v\n%s", err, run.stdout)
	}
	byID := map[string]report.Finding{}
	for _, g := range doc.Findings {
		byID[g.ID] = g
	}
	want := []report.Finding{f}
	scanByID := map[string]report.Finding{}
	for _, g := range rep.Findings {
		scanByID[g.ID] = g
	}
	for _, b := range f.BlockedBy {
		if g, ok := scanByID[b.FindingID]; ok {
			want = append(want, g)
		}
	}
	for _, w := range want {
		got, ok := byID[w.ID]
		if !ok {
			t.Errorf("why %s: no finding %s (%s %s on %s); why reported:\n%s", f.Object, w.ID, w.Check, w.RootCause.ID, w.Object, summaries(&doc))
			continue
		}
		if diff := findingDiff(w, got); diff != "" {
			t.Errorf("why %s: finding %s differs from the scan's: %s", f.Object, w.ID, diff)
		}
	}
	if len(doc.Findings) > 0 && doc.Findings[0].ID != f.ID && !sameObjectFinding(doc.Findings[0], f) {
		t.Errorf("why %s: first finding %s is not the object's own", f.Object, doc.Findings[0].ID)
	}
	return &doc
}

// sameObjectFinding: another check's finding on the same object may come first.
func sameObjectFinding(a, b report.Finding) bool {
	return a.Object.UID != "" && a.Object.UID == b.Object.UID
}

// moving matches what changes between two runs seconds apart while the facts stay: durations
// ("1s ago", "for 4s", "2.703s apart") and timestamps (a leader Lease renews in between).
var moving = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ms|s|m|h|d)([0-9]+(\.[0-9]+)?(ms|s|m|h|d))*\b|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z`)

func steady(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = moving.ReplaceAllString(l, "…")
	}
	return out
}

// findingDiff names what differs between the scan's finding and why's, in the fields a verdict
// is made of; summaries and messages may carry ages that move between two runs.
func findingDiff(scan, why report.Finding) string {
	var d []string
	cmp := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			j1, _ := json.Marshal(a)
			j2, _ := json.Marshal(b)
			d = append(d, what+": scan "+string(j1)+", why "+string(j2))
		}
	}
	cmp("check", scan.Check, why.Check)
	cmp("severity", scan.Severity, why.Severity)
	cmp("object", scan.Object.UID, why.Object.UID)
	cmp("root cause", scan.RootCause.ID, why.RootCause.ID)
	cmp("evidence", steady(scan.RootCause.Evidence), steady(why.RootCause.Evidence))
	cmp("fixes", scan.Fixes, why.Fixes)
	cmp("blockedBy", scan.BlockedBy, why.BlockedBy)
	return strings.Join(d, "; ")
}

// background is a run of the binary that goes on while the test acts on the cluster (why
// --watch); wait returns it once it exits, within commandTimeout.
type background struct {
	t    testing.TB
	args []string
	out  bytes.Buffer
	err  bytes.Buffer
	done chan error
	cmd  *exec.Cmd
}

// start runs the binary with args without waiting for it.
func (p plugin) start(t testing.TB, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	b := &background{t: t, args: args, done: make(chan error, 1)}
	b.cmd = exec.CommandContext(ctx, pluginBinary(t), args...)
	b.cmd.Env = append(commandEnv(t, p.kubeconfig), p.env...)
	b.cmd.Stdout, b.cmd.Stderr = &b.out, &b.err
	if err := b.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", strings.Join(args, " "), err)
	}
	go func() { b.done <- b.cmd.Wait(); cancel() }()
	return b
}

// wait returns the run once it has exited, as a finished pluginRun.
func (b *background) wait() *pluginRun {
	b.t.Helper()
	err := <-b.done
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		b.t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(b.args, " "), err, &b.out, &b.err)
	}
	return &pluginRun{t: b.t, args: b.args, stdout: b.out.String(), stderr: b.err.String(), code: code}
}

// whyInProcess runs why on TYPE/NAME in process with every check, every request logged, and fails
// if it listed pods cluster-wide or did not list those of the namespace it read: why reads one
// namespace's pods, whatever the object (issue 28).
func whyInProcess(t *testing.T, c *testcluster.Cluster, typ, name, ns string) (*why.Result, why.Target) {
	t.Helper()
	log, clients := loggedClients(t, c)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(clients.Discovery)), clients.Discovery, nil)
	target, err := why.Resolve(mapper, typ, name, ns)
	if err != nil {
		t.Fatal(err)
	}
	res, err := why.Run(t.Context(), clients, target, scan.Options{Checks: builtin.Checks().All()})
	if err != nil {
		t.Fatalf("why %s/%s: %v", typ, name, err)
	}
	if all := log.matching("GET", "/api/v1/pods"); len(all) > 0 {
		t.Errorf("why %s/%s listed pods cluster-wide: %v", typ, name, all)
	}
	if len(log.matching("GET", "/api/v1/namespaces/"+res.Namespace+"/pods")) == 0 {
		t.Errorf("why %s/%s did not list the pods of %s", typ, name, res.Namespace)
	}
	return res, target
}
