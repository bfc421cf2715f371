package checks

import (
	"sort"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

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
