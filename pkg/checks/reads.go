package checks

import "github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"

// RevisionSelector is implemented by checks that need some workloads' ControllerRevisions. The
// collector asks it along with the pod candidates, on the snapshot read so far, and reads just
// the revisions named (into Snapshot.Revisions), each once.
type RevisionSelector interface {
	RevisionCandidates(s *snapshot.Snapshot) []snapshot.RevisionRead
}

// Revisions returns what every check that needs ControllerRevisions asks for, each once; the
// full read of a revision wins over its metadata.
func Revisions(cs []Check) func(*snapshot.Snapshot) []snapshot.RevisionRead {
	return func(s *snapshot.Snapshot) []snapshot.RevisionRead {
		type key struct{ ns, name string }
		at := map[key]int{}
		var out []snapshot.RevisionRead
		for _, c := range cs {
			sel, ok := c.(RevisionSelector)
			if !ok {
				continue
			}
			for _, r := range sel.RevisionCandidates(s) {
				k := key{r.Namespace, r.Name}
				if i, seen := at[k]; seen {
					out[i].Full = out[i].Full || r.Full
					continue
				}
				at[k] = len(out)
				out = append(out, r)
			}
		}
		return out
	}
}
