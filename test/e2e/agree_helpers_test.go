package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// agreeRescans bounds the scans agreed runs after the caller's when the answers differ. A
// controller may record one more event, or retry a refused create, between a scan and the why or
// capture that follows it (the ReplicaSet controller's FailedCreate: k8s.io/kubernetes v1.37.1
// pkg/controller/replicaset/replica_set.go, manageReplicas); so a difference is judged on a fresh
// scan of the state, and the state is given a few looks to settle before the difference fails.
const agreeRescans = 3

// agreePause is how long agreed waits before a fresh scan, for the controllers to act on what
// they were doing when the last look differed.
const agreePause = time.Second

// whyAnswer is why's document on one object and the scan's findings on that object.
type whyAnswer struct {
	findings []report.Finding
	doc      *report.Report
}

// answers is one look at a state: a scan's exit code and report, why's documents on the objects
// it found stuck, and the offline report of a capture taken right after (nil when the look
// stopped short of a capture, why already differing).
type answers struct {
	code    int
	scan    *report.Report
	why     []whyAnswer
	offline *report.Report
}

// differs says where the look's answers disagree: the scan exited with a code the caller did not
// accept of its scan (wantExit: several when it polls a state that is still moving, as 0 or 2
// while a deletion becomes overdue); why's findings are not the scan's (whyDiffers); the offline
// ones are not the scan's (liveDiffers). Each comparison is as strict as on its own.
func (a answers) differs(accepted ...int) []string {
	var problems []string
	if !slices.Contains(accepted, a.code) {
		problems = append(problems, fmt.Sprintf("the scan exited %d, the scan the test judged %v", a.code, accepted))
	}
	for _, w := range a.why {
		for _, f := range w.findings {
			problems = append(problems, whyDiffers(a.scan, f, w.doc)...)
		}
	}
	if a.offline != nil {
		problems = append(problems, liveDiffers(a.scan, a.offline)...)
	}
	return problems
}

// settle looks again, at most rescans times, while the last look disagrees (differs returns what
// differs): it returns the first look that agrees, or the last one with what still differs, and how
// many times it looked again. The first look is the caller's; again takes a fresh one.
func settle[L any](rescans int, first L, differs func(L) []string, again func(n int, problems []string) L) (L, int, []string) {
	l := first
	problems := differs(l)
	n := 0
	for len(problems) > 0 && n < rescans {
		n++
		l = again(n, problems)
		problems = differs(l)
	}
	return l, n, problems
}

// agreed is the run's report (a scan -o json), once why on every object it found stuck (issue
// 28's "why agrees with scan on every e2e scenario") and an offline replay of a capture taken right
// after (issue 30's "each e2e scenario captured and scanned offline") agree with it (gather). When they differ, the state
// may have moved between the scan and them, the scan being the stale one as much as the others: the
// scan is run again with the same arguments and compared with a fresh why and capture, up to
// agreeRescans times. r becomes the scan that agreed, so what the caller reads of it afterwards
// (stdout, stderr, its time) is that scan's; a look that never agrees fails the test with its
// differences.
func (r *pluginRun) agreed() *report.Report {
	r.t.Helper()
	rep, _ := r.settled(true)
	return rep
}

// agreedAfter is agreed and how many extra scans it took.
func (r *pluginRun) agreedAfter() (*report.Report, int) {
	r.t.Helper()
	return r.settled(true)
}

// whyAgreed is agreed with why alone, no capture.
func (r *pluginRun) whyAgreed() *report.Report {
	r.t.Helper()
	rep, _ := r.settled(false)
	return rep
}

func (r *pluginRun) settled(capture bool) (*report.Report, int) {
	t := r.t
	t.Helper()
	if len(r.args) == 0 || r.args[0] != "scan" {
		t.Fatalf("agreed: %v is not a scan", r.args)
	}
	type look struct {
		run *pluginRun
		a   answers
	}
	began, accepted := time.Now(), r.accepted
	if len(accepted) == 0 {
		accepted = []int{r.code}
	}
	lookAt := func(run *pluginRun) look {
		return look{run: run, a: gather(t, run, capture)}
	}
	first := lookAt(r)
	l, extra, problems := settle(agreeRescans, first, func(l look) []string { return l.a.differs(accepted...) },
		func(n int, problems []string) look {
			t.Helper()
			t.Logf("scanning again (%d of at most %d), the answers differ:\n%s", n, agreeRescans, strings.Join(problems, "\n"))
			select {
			case <-t.Context().Done():
			case <-time.After(agreePause):
			}
			return lookAt(r.p.run(t, r.args))
		})
	*r = *l.run
	r.accepted = accepted
	for _, problem := range problems {
		t.Errorf("after %d extra scans: %s", extra, problem)
	}
	what := "why"
	if capture {
		what = "why and the offline replay"
	}
	t.Logf("%s agree with the scan after %d extra scans (%s)", what, extra, time.Since(began).Round(time.Millisecond))
	return l.a.scan, extra
}

// gather is run's answers: why on each object it found stuck (whyObjects), with the scan's
// own flags minus its scope and output; then, if why agrees, a capture of the same scan replayed
// offline (captureAndReplay).
func gather(t testing.TB, run *pluginRun, capture bool) answers {
	t.Helper()
	rep := run.report()
	a := answers{code: run.code, scan: rep}
	flags := whyFlags(run.args[1:])
	asked, objects := whyObjects(rep)
	began := time.Now()
	for _, fs := range asked {
		a.why = append(a.why, whyAnswer{findings: fs, doc: whyOn(t, run.p, fs[0].Object, flags)})
	}
	if len(asked) > 0 {
		t.Logf("why asked on %d of %d objects with findings (took %s)", len(asked), objects, time.Since(began).Round(time.Millisecond))
	}
	if !capture || len(a.differs(run.code)) > 0 {
		return a
	}
	c := captureAndReplay(t, run.p, run.args[1:])
	a.offline = c.offline
	t.Logf("capture took %s, %d answers, %d bytes", c.took.Round(time.Millisecond), c.bundle.Manifest.Requests, c.bundle.Manifest.Bytes)
	return a
}

// whyObjects are the objects of rep's findings that why is asked about, each with its findings,
// and how many objects rep found stuck: namespaced objects and Namespaces (why refuses other
// cluster-scoped kinds); past whyEveryObject of them, one object of each (check, root cause, kind)
// the report holds, so every root cause a scenario produces is still compared, at a bounded cost.
func whyObjects(rep *report.Report) ([][]report.Finding, int) {
	var objects []string
	byObject := map[string][]report.Finding{}
	for _, f := range rep.Findings {
		if f.Object.Namespace == "" && (f.Object.Kind != "Namespace" || f.Object.APIVersion != "v1") {
			continue
		}
		k := f.Object.APIVersion + " " + f.Object.Kind + " " + f.Object.Namespace + "/" + f.Object.Name
		if _, ok := byObject[k]; !ok {
			objects = append(objects, k)
		}
		byObject[k] = append(byObject[k], f)
	}
	var asked [][]report.Finding
	seen := map[string]bool{}
	for _, k := range objects {
		fresh := len(objects) <= whyEveryObject
		for _, f := range byObject[k] {
			key := f.Check + " " + f.RootCause.ID + " " + f.Object.Kind
			fresh = fresh || !seen[key]
			seen[key] = true
		}
		if fresh {
			asked = append(asked, byObject[k])
		}
	}
	return asked, len(objects)
}
