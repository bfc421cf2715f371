package render

import (
	"fmt"
	"io"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// suppressedCount is the table's line for the findings exemptions hold back: a count, the
// details being in -o json|yaml.
func suppressedCount(w io.Writer, n int) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "%d suppressed by exemptions, not counted (-o json lists them with who suppressed them and why).\n", n)
}

// SuppressedNote lists suppressed findings one line each: what, by which exemption, and why.
func SuppressedNote(w io.Writer, ss []report.Suppressed) {
	for _, s := range ss {
		fmt.Fprintf(w, "suppressed: %s %s on %s, by %s: %s\n", s.Check, s.RootCause.ID, s.Object, Suppressor(s.SuppressedBy), s.Reason)
	}
}

// Suppressor names an exemption the way a person looks for it: the annotated object, or the
// rule's index in its file, with its expiry.
func Suppressor(by report.Suppressor) string {
	s := by.Source
	switch {
	case by.Source == report.SuppressedByAnnotation && by.Object != nil:
		s = "annotation on " + by.Object.String()
	case by.Source == report.SuppressedByRule && by.Rule != nil:
		s = fmt.Sprintf("rules[%d] of %s", *by.Rule, by.File)
	}
	if by.Until != nil {
		s += " until " + by.Until.UTC().Format(time.RFC3339)
	}
	return s
}
