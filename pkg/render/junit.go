package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// FormatJUnit and FormatSARIF are the CI formats of `scan -o`.
const (
	FormatJUnit = "junit"
	FormatSARIF = "sarif"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
	SystemOut string      `xml:"system-out,omitempty"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	Skipped   *junitProblem `xml:"skipped"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit writes the report as JUnit XML for CI: one test suite per check, one test case per
// object; findings are failures, suppressed findings skipped, and a check that could not read
// what it detects from an error. Suites come in check order and cases in object order, so two
// scans of the same state give the same file.
func JUnit(w io.Writer, r *report.Report) error {
	suites := map[string]*junitSuite{}
	suite := func(check string) *junitSuite {
		if suites[check] == nil {
			suites[check] = &junitSuite{Name: check}
			if !r.Metadata.GeneratedAt.IsZero() {
				suites[check].Timestamp = r.Metadata.GeneratedAt.UTC().Format("2006-01-02T15:04:05")
			}
		}
		return suites[check]
	}
	for _, c := range r.Coverage.Checks {
		suite(c)
	}
	// One case per object: a second finding on the same object and check joins its failure.
	cases := map[string]*junitCase{}
	at := func(check string, o report.ObjectRef) *junitCase {
		k := check + "\x00" + o.String()
		if cases[k] == nil {
			cases[k] = &junitCase{Name: o.String(), Classname: check}
		}
		return cases[k]
	}
	for _, f := range r.Findings {
		suite(f.Check)
		c := at(f.Check, f.Object)
		c.Failure = join(c.Failure, junitProblem{Type: f.RootCause.ID, Message: f.Summary, Text: failureText(f)})
	}
	for _, s := range r.Suppressed {
		suite(s.Check)
		c := at(s.Check, s.Object)
		if c.Failure == nil {
			c.Skipped = join(c.Skipped, junitProblem{Message: fmt.Sprintf("%s suppressed by %s: %s", s.RootCause.ID, Suppressor(s.SuppressedBy), s.Reason)})
		}
	}
	for _, n := range r.Coverage.Skipped {
		suite(n.Check)
		c := at(n.Check, report.ObjectRef{Kind: "check", Name: n.Check})
		c.Name = "check could not run"
		c.Error = &junitProblem{Type: "unread-input", Message: n.Reason, Text: strings.Join(n.Inputs, "\n")}
	}
	for _, n := range r.Coverage.Degraded {
		s := suite(n.Check)
		if !slices.ContainsFunc(r.Coverage.Unread, func(u report.InputNote) bool { return slices.Contains(n.Inputs, u.Input) }) {
			// Evidence it ran without: the findings stand, the case list is whole.
			s.SystemOut += "degraded: " + n.Reason + "\n"
			continue
		}
		c := at(n.Check, report.ObjectRef{Kind: "check", Name: n.Check})
		c.Name = "inputs not read"
		c.Error = &junitProblem{Type: "unread-input", Message: n.Reason, Text: strings.Join(n.Inputs, "\n")}
	}
	for _, k := range slices.Sorted(maps.Keys(cases)) {
		c := cases[k]
		s := suites[c.Classname]
		s.Cases = append(s.Cases, *c)
		s.Tests++
		switch {
		case c.Error != nil:
			s.Errors++
		case c.Failure != nil:
			s.Failures++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	doc := junitSuites{Name: "kubectl-workloaddoctor scan"}
	for _, n := range slices.Sorted(maps.Keys(suites)) {
		s := suites[n]
		doc.Suites = append(doc.Suites, *s)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// join adds p to a case's problem: one object may have findings of several root causes.
func join(have *junitProblem, p junitProblem) *junitProblem {
	if have == nil {
		return &p
	}
	have.Type += "," + p.Type
	have.Message += "; " + p.Message
	have.Text += "\n\n" + p.Text
	return have
}

// failureText is what a CI page shows under a failed case: the ID fix takes, the root cause,
// its evidence and the default fix.
func failureText(f report.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s\n", f.ID, f.RootCause.ID, f.RootCause.Message)
	for _, e := range f.RootCause.Evidence {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	if len(f.Fixes) > 0 {
		fmt.Fprintf(&b, "fix: kubectl workloaddoctor fix %s (%s)\n", f.ID, f.Fixes[0].Action)
	}
	fmt.Fprintf(&b, "explain: kubectl workloaddoctor explain %s", f.RootCause.ID)
	return b.String()
}
