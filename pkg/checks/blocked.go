package checks

import (
	"fmt"
	"sort"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// link completes the blockedBy of every finding of a scan, the one place blockers are linked. A
// rule names the stuck objects its subject waits on (Draft.BlockedBy); a root cause that chains
// to its root has them followed down to it (chainToRoots), and every blocker left without a
// findingId names another check's finding on that object (linkBlockers).
func link(findings []report.Finding, cs []Check) {
	chains := map[string]bool{}
	for _, c := range cs {
		info := c.Info()
		for _, rc := range info.RootCauses {
			if rc.ChainsToRoot {
				chains[info.ID+"\x00"+rc.ID] = true
			}
		}
	}
	chainToRoots(findings, func(f report.Finding) bool { return chains[f.Check+"\x00"+f.RootCause.ID] })
	linkBlockers(findings)
}

// chainToRoots replaces the direct blockers of each finding whose root cause chains (see
// RootCause.ChainsToRoot) by the chain of stuck objects with a finding of the same check, nearest
// first, the root last: the first direct blocker with such a finding, then the first of that
// finding's own, and so on. Its summary names the root, its message says what the root is, and it
// loses its fixes: a write above the root would act on something that is waiting, not on what
// holds it. A chain stays within the check, whose verdicts on the objects along it are what the
// chain is made of. A finding none of whose blockers has a finding keeps no blockedBy.
func chainToRoots(fs []report.Finding, chains func(report.Finding) bool) {
	own := map[string]int{}
	for i, f := range fs {
		own[f.Check+"\x00"+blockKey(f.Object.APIVersion, f.Object.Kind, f.Object.Namespace, f.Object.Name)] = i
	}
	direct := make([][]report.BlockRef, len(fs))
	for i := range fs {
		direct[i] = fs[i].BlockedBy
	}
	// next returns the finding of the nearest stuck object finding i waits on.
	next := func(i int) (int, bool) {
		if !chains(fs[i]) {
			return 0, false
		}
		for _, b := range direct[i] {
			if j, ok := own[fs[i].Check+"\x00"+blockKey(b.APIVersion, b.Kind, b.Namespace, b.Name)]; ok && j != i {
				return j, true
			}
		}
		return 0, false
	}
	for i := range fs {
		if !chains(fs[i]) {
			continue
		}
		var chain []int
		seen := map[int]bool{i: true}
		for j, ok := next(i); ok && !seen[j]; j, ok = next(j) {
			seen[j] = true
			chain = append(chain, j)
		}
		f := &fs[i]
		f.BlockedBy = nil
		if len(chain) == 0 {
			continue
		}
		var names []string
		for _, j := range chain {
			o := fs[j].Object
			f.BlockedBy = append(f.BlockedBy, report.BlockRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
				FindingID: fs[j].ID})
			names = append(names, RefName(o))
		}
		root := fs[chain[len(chain)-1]]
		if len(chain) > 1 || !strings.Contains(f.Summary, RefName(root.Object)) {
			f.Summary += fmt.Sprintf("; root: %s, %s", RefName(root.Object), root.Summary)
		}
		f.RootCause.Message += fmt.Sprintf(" It waits on %s; the root is %s (finding %s, %s): what fixes that one lets "+
			"this deletion finish on its own.", strings.Join(names, ", then "), RefName(root.Object), root.ID, root.RootCause.ID)
		f.Fixes = []report.Fix{}
	}
}

// RefName names an object in prose: its kind in lower case, then namespace/name.
func RefName(o report.ObjectRef) string {
	n := strings.ToLower(o.Kind) + " "
	if o.Namespace != "" {
		n += o.Namespace + "/"
	}
	return n + o.Name
}

// linkBlockers names, in each blockedBy entry that has none yet, the finding another check
// reported on that object in the same scan: a check points at a stuck object another check owns
// (rollout-stalled at a pod stuck-preparing-normal judges) without knowing that check's verdict.
// An object with several findings is named by the first of them in check order.
func linkBlockers(findings []report.Finding) {
	byObject := map[string][]int{}
	for i, f := range findings {
		k := blockKey(f.Object.APIVersion, f.Object.Kind, f.Object.Namespace, f.Object.Name)
		byObject[k] = append(byObject[k], i)
	}
	for _, in := range byObject {
		sort.SliceStable(in, func(a, b int) bool { return findings[in[a]].Check < findings[in[b]].Check })
	}
	for i := range findings {
		f := &findings[i]
		for j := range f.BlockedBy {
			b := &f.BlockedBy[j]
			if b.FindingID != "" {
				continue
			}
			for _, k := range byObject[blockKey(b.APIVersion, b.Kind, b.Namespace, b.Name)] {
				if k != i {
					b.FindingID = findings[k].ID
					break
				}
			}
		}
	}
}

// blockKey identifies an object by its API group (not version), kind, namespace and name.
func blockKey(apiVersion, kind, namespace, name string) string {
	group := ""
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		group = g
	}
	return group + "/" + kind + "/" + namespace + "/" + name
}
