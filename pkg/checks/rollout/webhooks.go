package rollout

import (
	"fmt"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/webhookenv"
)

// webhooks is the admission webhooks of the run, read when a refusal first names one.
func (p *pass) webhooks() *webhookenv.Env {
	if p.hooks == nil {
		p.hooks = webhookenv.New(p.Snapshot)
	}
	return p.hooks
}

// podLabels are the labels the controller's pods are created with: the template's, and the
// revision label (a Deployment's ReplicaSet adds pod-template-hash, the others
// controller-revision-hash). An objectSelector is matched on them.
func (r *rollout) podLabels() map[string]string {
	out := map[string]string{}
	for k, v := range r.templateLabels {
		out[k] = v
	}
	if r.update == "" {
		return out
	}
	if r.core != nil && r.core.dep != nil {
		out[podTemplateHashLabel] = r.update
	} else {
		out[revisionLabel] = r.update
	}
	return out
}

// judgeRefuser finds the webhook a refused create names among the webhooks the scan read, and
// judges it for the create of the rollout's pods with the admission model: its configuration,
// failurePolicy, how it matches, and whether its backend can answer.
func (p *pass) judgeRefuser(r *rollout, ref *refusal) {
	if ref.by.kind != "AdmissionWebhook" {
		return
	}
	env := p.webhooks()
	req := env.PodRequest(true, r.meta.Namespace, "", r.podLabels())
	j, ok := env.Named(ref.by.name, req, ref.message)
	switch {
	case ok:
		if !ref.by.callFailed && j.Backend.State == admission.Unknown {
			// A webhook that denied was called and answered: a URL's backend is up too.
			j.Backend.State, j.Backend.Reason = admission.Available, "it answered the apiserver and denied the request"
		}
		ref.hook = &j
		ref.lines = append(ref.lines, j.Evidence(env, "the creates of its pods")...)
	case env.Unread() != nil:
		ref.lines = append(ref.lines, checks.Evidencef("the webhook configurations could not be read: %v", env.Unread()))
	default:
		ref.lines = append(ref.lines, checks.Evidencef("no webhook configuration read has a webhook named %s: it was removed since the refusal, "+
			"and the controller's next retry goes past it", ref.by.name))
	}
}

// createsBlockedByWebhook: the apiserver refuses the rollout's new pods because it cannot call a
// webhook with failurePolicy Fail that is called for pod creates, and the webhook's backend
// cannot answer (its Service missing, no ready endpoint, calls failing): `failed calling webhook`
// (Dispatch in k8s.io/apiserver pkg/admission/plugin/webhook/validating/dispatcher.go and
// mutating/dispatcher.go, v1.37.1). The template is not at fault and the webhook is where to go,
// as stuck-terminating says of a finalizer removal the same webhook rejects: the root cause is
// admission-webhook-unavailable in both, with the configuration and its Service in blockedBy.
func createsBlockedByWebhook(_ *pass, st *stall) (checks.Draft, bool) {
	h, by := st.refused.hook, st.refused.by
	if h == nil || !by.callFailed || !h.Hook.FailsClosed() || h.Backend.State != admission.Unavailable ||
		h.Match.Verdict == admission.NoMatch || (st.r.deadline == nil && st.r.core == nil) {
		return checks.Draft{}, false
	}
	d := st.draft(RootCauseAdmissionWebhookUnavailable, fmt.Sprintf("The controller cannot create the %s's new pods: every create is sent to %s "+
		"(failurePolicy Fail), whose backend cannot answer (%s), so the apiserver rejects it: %s. The template is not at fault. %s; "+
		"the controller retries and the rollout carries on.", st.r.kind, h.Hook, h.Backend.Reason, checks.Truncate(st.refused.message, 300), h.Remedy()))
	d.Summary += fmt.Sprintf(": webhook %s rejects its new pods (%s)", h.Hook.Name, h.Backend.Reason)
	d.BlockedBy = append(d.BlockedBy, h.BlockedBy()...)
	return d, true
}
