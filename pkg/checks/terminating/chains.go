package terminating

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// hold records what a built-in controller's condition waits on for a subject.
func (a *pass) hold(subj subject, bs []blocker) {
	if a.held == nil {
		a.held = map[types.UID][]blocker{}
	}
	a.held[subj.meta.GetUID()] = bs
}

// link fills blockedBy: a finding whose object waits on another stuck object (one with a finding
// of its own) names the chain down to the root, nearest first, and its summary names the root.
// Only the root's finding keeps fixes: a write above it would act on something that is waiting,
// not on what holds it. A Terminating namespace links to a stuck object inside it the same way.
func (a *pass) link(fs []report.Finding) {
	byUID := map[string]int{}
	inNamespace := map[string][]int{}
	for i, f := range fs {
		if f.Object.UID != "" {
			byUID[f.Object.UID] = i
		}
		if f.Object.Namespace != "" {
			inNamespace[f.Object.Namespace] = append(inNamespace[f.Object.Namespace], i)
		}
	}
	// next returns the finding of the nearest stuck object finding i waits on.
	next := func(i int) (int, bool) {
		f := fs[i]
		if f.Object.Kind == "Namespace" && f.RootCause.ID == RootCauseNamespaceContentRemaining {
			in := inNamespace[f.Object.Name]
			// The deepest-held first is arbitrary; the first by name keeps reports stable.
			sort.Slice(in, func(x, y int) bool { return fs[in[x]].Object.Name < fs[in[y]].Object.Name })
			if len(in) > 0 {
				return in[0], true
			}
			return 0, false
		}
		for _, b := range a.held[types.UID(f.Object.UID)] {
			if j, ok := byUID[b.ref.UID]; ok && j != i {
				return j, true
			}
		}
		return 0, false
	}
	chains := make([][]int, len(fs))
	for i := range fs {
		seen := map[int]bool{i: true}
		for j, ok := next(i); ok && !seen[j]; j, ok = next(j) {
			seen[j] = true
			chains[i] = append(chains[i], j)
		}
	}
	for i, chain := range chains {
		if len(chain) == 0 {
			continue
		}
		f := &fs[i]
		var names []string
		for _, j := range chain {
			o := fs[j].Object
			f.BlockedBy = append(f.BlockedBy, report.BlockRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
				FindingID: report.FindingID(o, fs[j].Check, fs[j].RootCause.ID)})
			names = append(names, refName(o))
		}
		root := fs[chain[len(chain)-1]]
		if len(chain) > 1 || !strings.Contains(f.Summary, refName(root.Object)) {
			f.Summary += fmt.Sprintf("; root: %s, %s", refName(root.Object), root.Summary)
		}
		f.RootCause.Message += fmt.Sprintf(" It waits on %s; the root is %s (finding %s, %s): what fixes that one lets "+
			"this deletion finish on its own.", strings.Join(names, ", then "), refName(root.Object), root.ID, root.RootCause.ID)
		f.Fixes = []report.Fix{}
	}
	for i := range fs {
		fs[i].Fixes = withoutProtectionRemoval(fs[i].Fixes)
	}
}

// withoutProtectionRemoval drops any removal of a protection finalizer: its controller removes
// it once its condition holds, and removing it earlier deletes what is still in use.
func withoutProtectionRemoval(fixes []report.Fix) []report.Fix {
	out := fixes[:0]
	for _, f := range fixes {
		if f.Action == checks.ActionRemoveFinalizer && protectionFinalizers[f.Params["finalizer"]] {
			continue
		}
		out = append(out, f)
	}
	return out
}

func refName(o report.ObjectRef) string {
	n := strings.ToLower(o.Kind) + " "
	if o.Namespace != "" {
		n += o.Namespace + "/"
	}
	return n + o.Name
}
