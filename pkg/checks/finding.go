package checks

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Ref names an object in a finding, with the UID and resourceVersion fix checks before writing.
func Ref(apiVersion, kind string, m metav1.Object) report.ObjectRef {
	return report.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(),
		UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion()}
}

// OwnerRef names an object's controller, in the object's namespace.
func OwnerRef(namespace string, ref *metav1.OwnerReference) *report.ObjectRef {
	if ref == nil {
		return nil
	}
	return &report.ObjectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: namespace, Name: ref.Name, UID: string(ref.UID)}
}

// Draft is what a check fills in; NewFinding completes it from the check's root-cause table.
type Draft struct {
	RootCause string
	Object    report.ObjectRef
	Owner     *report.ObjectRef
	Node      string
	Since     time.Time
	Summary   string
	Message   string
	Evidence  []string
	// BlockedBy are the stuck objects the subject waits on, nearest first (report.Finding.BlockedBy).
	BlockedBy []report.BlockRef
	// References add to the root cause's own references.
	References []string
	Fixes      []report.Fix
}

// NewFinding builds a report finding: severity and references come from the check's root-cause
// table, so `checks`/`explain` and the findings cannot disagree.
func NewFinding(info Info, f Draft) report.Finding {
	var rc RootCause
	for _, r := range info.RootCauses {
		if r.ID == f.RootCause {
			rc = r
		}
	}
	if rc.ID == "" {
		// A root cause missing from the table is a programming error; report it visibly.
		rc = RootCause{ID: f.RootCause, Severity: report.SeverityError}
	}
	refs := append(append([]string{}, rc.References...), f.References...)
	evidence := f.Evidence
	if evidence == nil {
		evidence = []string{}
	}
	fixes := []report.Fix{}
	for _, fx := range f.Fixes {
		if rc.Offers(fx.Action) {
			fixes = append(fixes, fx)
			continue
		}
		// A fix the root cause does not offer is a programming error, as an unknown root cause
		// is: fix would act where `checks` and `explain` say nothing may. Drop it, visibly.
		rc.Severity = report.SeverityError
		evidence = append(evidence[:len(evidence):len(evidence)],
			fmt.Sprintf("fix %s dropped: root cause %s does not offer it", fx.Action, rc.ID))
	}
	out := report.Finding{
		Check: info.ID, Severity: rc.Severity, Object: f.Object, Owner: f.Owner, Node: f.Node,
		Since: f.Since.UTC().Truncate(time.Second), Summary: f.Summary,
		RootCause: report.RootCause{ID: rc.ID, Message: f.Message, Evidence: evidence, References: uniq.Of(refs)},
		Fixes:     fixes, BlockedBy: f.BlockedBy,
	}
	out.ID = report.FindingID(out.Object, out.Check, out.RootCause.ID)
	return out
}
