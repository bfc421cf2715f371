package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// and every finding down its chain as rep has it. It returns why's document.
func whyAgreesWithScan(t testing.TB, p plugin, rep *report.Report, f report.Finding, flags ...string) *report.Report {
	t.Helper()
	doc := whyOn(t, p, f.Object, flags)
	for _, problem := range whyDiffers(rep, f, doc) {
		t.Error(problem)
	}
	return doc
}

// whyOn runs `why -o json` with flags on obj and returns its document.
func whyOn(t testing.TB, p plugin, obj report.ObjectRef, flags []string) *report.Report {
	t.Helper()
	args := append([]string{whyType(obj) + "/" + obj.Name, "-o", "json"}, flags...)
	if obj.Namespace != "" {
		args = append(args, "-n", obj.Namespace)
	}
	run := p.why(t, args...).wantExit(0, 2)
	var doc report.Report
	if err := json.Unmarshal([]byte(run.stdout), &doc); err != nil {
		t.Fatalf("why -o json is not a report: %v\n%s", err, run.stdout)
	}
	return &doc
}

// whyDiffers says where doc, why's document on the object of f, does not hold f and every
// finding of its chain as the scan report rep has them, f's object's own finding first.
func whyDiffers(rep *report.Report, f report.Finding, doc *report.Report) []string {
	var problems []string
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
			problems = append(problems, fmt.Sprintf("why %s: no finding %s (%s %s on %s); why reported:\n%s", f.Object, w.ID, w.Check, w.RootCause.ID, w.Object, summaries(doc)))
			continue
		}
		if diff := findingDiff(w, got); diff != "" {
			problems = append(problems, fmt.Sprintf("why %s: finding %s differs from the scan's: %s", f.Object, w.ID, diff))
		}
	}
	if len(doc.Findings) > 0 && doc.Findings[0].ID != f.ID && !sameObjectFinding(doc.Findings[0], f) {
		problems = append(problems, fmt.Sprintf("why %s: first finding %s is not the object's own", f.Object, doc.Findings[0].ID))
	}
	return problems
}

// whyEveryObject is how many objects a report may find stuck for why to be asked about each
// (whyObjects).
const whyEveryObject = 8

// whyFlags are the flags of a scan's arguments that why takes as they are: the checks, the
// threshold, where the controllers run. The scope (-n, -A, -l) is why's own, the output its -o json.
func whyFlags(scanArgs []string) []string {
	keep := map[string]bool{"--checks": true, "--skip-checks": true, "--min-age": true, "--kruise-namespace": true,
		"--kruise-deployment": true, "--fail-on": true}
	var flags []string
	for i := 0; i < len(scanArgs); i++ {
		name, _, inline := strings.Cut(scanArgs[i], "=")
		if !keep[name] {
			continue
		}
		flags = append(flags, scanArgs[i])
		if !inline && i+1 < len(scanArgs) {
			flags = append(flags, scanArgs[i+1])
			i++
		}
	}
	return flags
}

// sameObjectFinding: another check's finding on the same object may come first.
func sameObjectFinding(a, b report.Finding) bool {
	return a.Object.UID != "" && a.Object.UID == b.Object.UID
}

// moving matches what changes between two runs seconds apart while the facts stay: durations
// ("1s ago", "for 4s", "2.703s apart"), timestamps (a leader Lease renews in between), and how
// many times an event was seen ("(x9, last 2s ago)": a controller retrying a refused create
// bumps the count of the same event: client-go tools/record events_cache.go, EventCorrelate,
// v1.37.1).
var moving = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ms|s|m|h|d)([0-9]+(\.[0-9]+)?(ms|s|m|h|d))*\b|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z|\(x[0-9]+,`)

// renewal matches how a live leader's Lease was seen renewed: between the scan's two reads of it,
// or shortly before the first. Which one a run sees depends on when it read the Lease against the
// leader's renew period (2 s for kruise-manager), not on the leader: both say it is alive.
var renewal = regexp.MustCompile(`^(leader: pod \S+ holds Lease \S+), renewed (during the scan|… before the apiserver's time).*$`)

// refusedPod matches the pod a quoted create refusal names: the ReplicaSet controller generates a
// new name for every create it retries (k8s.io/kubernetes v1.37.1 pkg/controller/controller_utils.go,
// RealPodControl.CreatePodsWithGenerateName), so a ReplicaFailure condition read seconds apart
// quotes another pod for the same refusal.
var refusedPod = regexp.MustCompile(`pods \\?"[^"\\]+\\?" is forbidden`)

func steady(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = refusedPod.ReplaceAllString(moving.ReplaceAllString(l, "…"), `pods "…" is forbidden`)
		out[i] = renewal.ReplaceAllString(l, "$1, renewed recently")
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
// if it listed pods cluster-wide or did not list those of the namespace it read, or listed the
// nodes when the object is not one: why reads one namespace's pods, whatever the object, and the
// nodes it judges by name (issue 28). It returns the log for more.
func whyInProcess(t *testing.T, c *testcluster.Cluster, typ, name, ns string) (*why.Result, why.Target, *requestLog) {
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
	if all := log.matching("GET", "/api/v1/nodes"); len(all) > 0 && target.Kind != "Node" {
		t.Errorf("why %s/%s listed every node: %v", typ, name, all)
	}
	return res, target, log
}
