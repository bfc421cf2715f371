package checks

import "github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"

// ReadDeclarer is implemented by checks that read more than the bulk lists: some pods in full,
// some workloads' ControllerRevisions. The collector asks each once, on the indexed
// metadata-only snapshot, and carries out the reads it declares (snapshot.Reads), the
// conditional ones as the reads before them show they are due.
type ReadDeclarer interface {
	DeclareReads(s *snapshot.Snapshot) snapshot.Reads
}

// DeclareReads asks every check that reads more than the bulk lists what it reads, once, and
// returns the declarations in check order. Reads two checks declare are carried out once.
func DeclareReads(cs []Check, s *snapshot.Snapshot) snapshot.Reads {
	var out snapshot.Reads
	for _, c := range cs {
		if d, ok := c.(ReadDeclarer); ok {
			out.Add(d.DeclareReads(s))
		}
	}
	return out
}
