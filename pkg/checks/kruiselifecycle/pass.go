package kruiselifecycle

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/webhookenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// pass is what one run of either check knows: the kruise-manager and the snapshot, and the
// CloneSets whose status is frozen, judged once and only when asked for.
type pass struct {
	*kruiseenv.Env
	// frozenAfter is the age a frozen status must reach: the threshold expectations-unsatisfied
	// uses in this scan.
	frozenAfter time.Duration
	// expectations describes expectations-unsatisfied, whose findings both checks build
	// (stuck-preparing-normal names them).
	expectations checks.Info
	frozen       map[types.UID]*frozenWorkload
	// hooks are the admission webhooks, read when first asked for.
	hooks *webhookenv.Env
}

// newPass reads the manager once. threshold and ownDefault are the running check's: the
// expectations verdict uses the threshold the expectations check would use in this scan.
func newPass(s *snapshot.Snapshot, threshold, ownDefault time.Duration, expectations checks.Info) *pass {
	env := kruiseenv.New(s)
	return &pass{Env: env, expectations: expectations,
		frozenAfter: effectiveThreshold(s, threshold, ownDefault, env.ExpectationTimeout())}
}

// frozenWorkloads is the verdict for every CloneSet of the snapshot, by UID.
func (p *pass) frozenWorkloads() map[types.UID]*frozenWorkload {
	if p.frozen == nil {
		p.frozen = map[types.UID]*frozenWorkload{}
		for _, w := range p.Snapshot.Workloads {
			// A workload whose pods the label selector may have cut is not judged on them.
			if !p.Snapshot.Scope.PodsComplete(w) {
				continue
			}
			if v := frozenVerdict(p, w); v != nil {
				p.frozen[w.UID] = v
			}
		}
	}
	return p.frozen
}

// frozenWorkload returns the verdict on w when its status is frozen.
func (p *pass) frozenWorkload(w *kruise.Workload) (*frozenWorkload, bool) {
	v, ok := p.frozenWorkloads()[w.UID]
	return v, ok
}
