package why

import (
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Node is one object of the tree: the object, its state, and its finding when it has one. Its
// children are the stuck objects it waits on.
type Node struct {
	Ref      report.ObjectRef
	State    string
	Finding  *report.Finding
	Children []*Node
}

// Root reports whether the node's finding is where its chain ends: no finding below it. What it
// waits on may still be drawn under it, an object its blockedBy names that no check judged (the
// CRD whose conversion webhook fails, the APIService whose Service is gone).
func (n *Node) Root() bool { return n.Finding != nil && !n.judgedBelow() }

// judgedBelow reports whether an object under n has a finding.
func (n *Node) judgedBelow() bool {
	for _, c := range n.Children {
		if c.Finding != nil || c.judgedBelow() {
			return true
		}
	}
	return false
}

// Build picks, out of a scan's report, what answers "why is obj stuck": the findings on obj, each
// a tree down the blockedBy chain to its root, each object's state as state says. When obj has
// no finding of its own but a chain passes through it, the tree starts at obj with the rest of
// that chain. The findings that wait on obj are named in HeldBy.
func Build(r *report.Report, obj report.ObjectRef, state func(report.ObjectRef) string) *Result {
	byID := map[string]*report.Finding{}
	for i := range r.Findings {
		byID[r.Findings[i].ID] = &r.Findings[i]
	}
	res := &Result{Object: obj, Now: r.Metadata.GeneratedAt}
	var order []*report.Finding
	seen := map[string]bool{}
	var grow func(ref report.ObjectRef, f *report.Finding, blockers []report.BlockRef, path map[string]bool) *Node
	grow = func(ref report.ObjectRef, f *report.Finding, blockers []report.BlockRef, path map[string]bool) *Node {
		n := &Node{Ref: ref, State: state(ref), Finding: f}
		if f != nil && !seen[f.ID] {
			seen[f.ID] = true
			order = append(order, f)
		}
		path[key(ref)] = true
		defer delete(path, key(ref))
		// A chain's blockers are each other's too (nearest first): a blocker already drawn under
		// an earlier sibling is not drawn twice.
		drawn := map[string]bool{}
		for _, b := range blockers {
			bref := report.ObjectRef{APIVersion: b.APIVersion, Kind: b.Kind, Namespace: b.Namespace, Name: b.Name}
			k := key(bref)
			if drawn[k] || path[k] {
				continue
			}
			var child *Node
			if g := byID[b.FindingID]; g != nil {
				child = grow(g.Object, g, g.BlockedBy, path)
			} else {
				child = grow(bref, nil, nil, path)
			}
			markDrawn(child, drawn)
			n.Children = append(n.Children, child)
		}
		return n
	}
	for i := range r.Findings {
		if f := &r.Findings[i]; same(f.Object, obj) {
			res.Trees = append(res.Trees, grow(obj, f, f.BlockedBy, map[string]bool{}))
		}
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		for k, b := range f.BlockedBy {
			if key(report.ObjectRef{APIVersion: b.APIVersion, Kind: b.Kind, Namespace: b.Namespace, Name: b.Name}) != key(obj) {
				continue
			}
			res.HeldBy = append(res.HeldBy, f.Object)
			if len(res.Trees) == 0 && b.FindingID == "" {
				res.Trees = append(res.Trees, grow(obj, nil, f.BlockedBy[k+1:], map[string]bool{}))
			}
		}
	}
	if len(res.Trees) == 0 {
		res.Trees = []*Node{{Ref: obj, State: state(obj)}}
	}
	res.Report = document(r, order)
	// What exemptions hold back about the object is said, not hidden: the answer names them.
	for _, sf := range r.Suppressed {
		if same(sf.Object, obj) {
			res.Report.Suppressed = append(res.Report.Suppressed, sf)
		}
	}
	res.Report.Warnings = r.Warnings
	return res
}

// document is the report r restricted to fs, in their order: the answer's findings as the
// report's schema has them, so `fix --from-report` takes it too.
func document(r *report.Report, fs []*report.Finding) *report.Report {
	doc := &report.Report{Metadata: r.Metadata, Coverage: r.Coverage}
	for _, f := range fs {
		doc.Findings = append(doc.Findings, *f)
	}
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	doc.Normalize() // fills the summary and empty lists, and sorts: the chain order is put back
	byID := map[string]report.Finding{}
	for _, f := range doc.Findings {
		byID[f.ID] = f
	}
	for i, id := range ids {
		doc.Findings[i] = byID[id]
	}
	return doc
}

func markDrawn(n *Node, drawn map[string]bool) {
	drawn[key(n.Ref)] = true
	for _, c := range n.Children {
		markDrawn(c, drawn)
	}
}

// same reports whether a finding's object is obj: by UID when both have one (a deleted and
// recreated object of the same name is another object), else by group, kind and name.
func same(a, b report.ObjectRef) bool {
	if a.UID != "" && b.UID != "" {
		return a.UID == b.UID
	}
	return key(a) == key(b)
}

// key identifies an object by API group (not version), kind, namespace and name, as blockedBy
// entries name it.
func key(o report.ObjectRef) string {
	group := ""
	if g, _, ok := strings.Cut(o.APIVersion, "/"); ok {
		group = g
	}
	return group + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name
}
