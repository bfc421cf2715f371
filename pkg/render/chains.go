package render

import (
	"fmt"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// chains folds the findings that wait on a chain of stuck objects under their root's row: the
// table shows one problem, not one row per object it holds. It returns the findings that keep a
// row and, by root finding ID, the objects each root holds. A finding whose root is not among fs
// keeps its own row.
func chains(fs []report.Finding) ([]report.Finding, map[string][]string) {
	present := map[string]bool{}
	for _, f := range fs {
		present[f.ID] = true
	}
	held := map[string][]string{}
	var rows []report.Finding
	for _, f := range fs {
		if root := rootID(f); root != "" && present[root] {
			held[root] = append(held[root], objectName(f.Object.Kind, f.Object.Namespace, f.Object.Name))
			continue
		}
		rows = append(rows, f)
	}
	return rows, held
}

func rootID(f report.Finding) string {
	if len(f.BlockedBy) == 0 {
		return ""
	}
	return f.BlockedBy[len(f.BlockedBy)-1].FindingID
}

// holdsNote says what a root holds, the first few by name.
func holdsNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	shown := names
	if len(shown) > 3 {
		shown = shown[:3]
	}
	s := "; also holds " + strings.Join(shown, ", ")
	if len(names) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return s + " (-o wide lists each)"
}

// chainNote is the chain a finding waits on, for wide output: nearest first, the root last.
func chainNote(f report.Finding) string {
	if len(f.BlockedBy) == 0 {
		return ""
	}
	var parts []string
	for _, b := range f.BlockedBy {
		parts = append(parts, objectName(b.Kind, b.Namespace, b.Name))
	}
	return "\nblocked by: " + strings.Join(parts, " -> ") + " (root finding " + rootID(f) + ")"
}

func objectName(kind, ns, name string) string {
	return report.ObjectRef{Kind: kind, Namespace: ns, Name: name}.String()
}
