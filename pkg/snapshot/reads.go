package snapshot

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// Reads are the targeted reads a check declares: the pods it needs in full and the
// ControllerRevisions it needs, beyond what the bulk lists hold. A check declares them once, on
// the indexed metadata-only snapshot. Some reads are worth making only once earlier ones show
// something (a group is read whole once its sample differs, a revision once a pod judged against
// it drifts): such a read carries the condition that says when, and the collector applies it to
// the snapshot as read so far after each round of reads, without asking the check again.
type Reads struct {
	Pods      []PodReads
	Revisions []RevisionReads
	// ReplicaSets are read first, so that pods declared From them are known.
	ReplicaSets []ReplicaSetRead
	// Nodes are read last, on the pods read in full. A scan that lists every node has them
	// already; one that reads nodes by name (Snapshot.NodesByName) reads these and no other.
	Nodes []NodeReads
}

// NodeReads names nodes to read, with their heartbeat Leases: From is asked on the snapshot
// once the pods are read.
type NodeReads struct {
	From func(*Snapshot) []string
}

// ReplicaSetRead lists the ReplicaSets of one Deployment: those its selector matches in its
// namespace, kept when the Deployment is their controller.
type ReplicaSetRead struct {
	Namespace string
	// Selector is the Deployment's label selector as text.
	Selector   string
	Deployment types.UID
}

// Condition says, on the snapshot as read so far, whether a declared read is due.
type Condition func(*Snapshot) bool

// PodReads are pods to read in full, once When holds (at once when When is nil). With Widen,
// UIDs are a sample standing for All, and All is read too once Widen holds. From names pods
// only earlier reads reveal (a Deployment's pods, once its ReplicaSets are read): it is asked
// on the snapshot as read so far, each round.
type PodReads struct {
	UIDs  []types.UID
	From  func(*Snapshot) []types.UID
	When  Condition
	All   []types.UID
	Widen Condition
}

// RevisionReads are ControllerRevisions to read, once When holds (at once when When is nil).
type RevisionReads struct {
	Reads []RevisionRead
	When  Condition
}

// Add appends what another check declares.
func (r *Reads) Add(o Reads) {
	r.Pods = append(r.Pods, o.Pods...)
	r.Revisions = append(r.Revisions, o.Revisions...)
	r.ReplicaSets = append(r.ReplicaSets, o.ReplicaSets...)
	r.Nodes = append(r.Nodes, o.Nodes...)
}

// NodesDue returns the node names the declaration names on s, each once, sorted.
func (r Reads) NodesDue(s *Snapshot) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range r.Nodes {
		for _, name := range n.From(s) {
			if name != "" && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// PodsDue returns the pods the declaration has due on s, each once, in the order declared. Pods
// already read in full are among them: the collector skips what it has read.
func (r Reads) PodsDue(s *Snapshot) []types.UID {
	seen := map[types.UID]bool{}
	var out []types.UID
	for _, p := range r.Pods {
		if p.When != nil && !p.When(s) {
			continue
		}
		uids := p.UIDs
		if p.Widen != nil && p.Widen(s) {
			uids = p.All
		}
		if p.From != nil {
			uids = append(slices.Clip(uids), p.From(s)...)
		}
		for _, uid := range uids {
			if !seen[uid] {
				seen[uid] = true
				out = append(out, uid)
			}
		}
	}
	return out
}

// RevisionsDue returns the ControllerRevisions the declaration has due on s, each once, in the
// order declared: in full if any read due wants its data.
func (r Reads) RevisionsDue(s *Snapshot) []RevisionRead {
	type key struct{ ns, name string }
	at := map[key]int{}
	var out []RevisionRead
	for _, rr := range r.Revisions {
		if rr.When != nil && !rr.When(s) {
			continue
		}
		for _, rev := range rr.Reads {
			k := key{rev.Namespace, rev.Name}
			if i, seen := at[k]; seen {
				out[i].Full = out[i].Full || rev.Full
				continue
			}
			at[k] = len(out)
			out = append(out, rev)
		}
	}
	return out
}
