package kruiselifecycle

import (
	corev1 "k8s.io/api/core/v1"

	"fmt"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/webhookenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// RootCauseAdmissionWebhookUnavailable is shared by both checks, and named as rollout-stalled and
// stuck-terminating name it: a webhook with failurePolicy Fail whose backend cannot answer rejects
// the pod write the controller must make.
const RootCauseAdmissionWebhookUnavailable = "admission-webhook-unavailable"

// webhooks is the admission webhooks of the run, read when first asked for.
func (p *pass) webhooks() *webhookenv.Env {
	if p.hooks == nil {
		p.hooks = webhookenv.New(p.Snapshot)
	}
	return p.hooks
}

// podCreate is the create of a pod of the workload, with its template's labels.
func (p *pass) podCreate(w *kruise.Workload) admission.Request {
	return p.webhooks().PodRequest(true, w.Namespace, "", w.Template.Labels)
}

// blockedCreate returns the webhook that rejects the workload's pod creates: the one its newest
// FailedCreate event or FailedScale condition quotes as failing to call, when it fails closed, is
// called for the creates and its backend cannot answer.
func (p *pass) blockedCreate(v *frozenWorkload) (webhookenv.Judged, bool) {
	var msgs []string
	if failed := kruiseenv.FailedCreates(p.Snapshot, v.w); len(failed) > 0 {
		msgs = append(msgs, failed[len(failed)-1].Message)
	}
	if cond, ok := v.w.Condition("FailedScale"); ok && cond.Status == string(corev1.ConditionTrue) {
		msgs = append(msgs, cond.Message)
	}
	for _, m := range msgs {
		if j, ok := p.webhooks().Quoted(m, p.podCreate(v.w)); ok && j.Blocks() {
			return j, true
		}
	}
	return webhookenv.Judged{}, false
}

// frozenWebhookBlocks: the controller's pod creates are rejected because a webhook that fails
// closed cannot be called (`failed calling webhook`, Dispatch in k8s.io/apiserver
// pkg/admission/plugin/webhook/mutating/dispatcher.go, v1.37.1); OpenKruise's own mpod.kb.io is
// one while no kruise-manager pod serves it. The webhook is where to go, not the controller.
func frozenWebhookBlocks(p *pass, v *frozenWorkload) (checks.Draft, bool) {
	j, ok := p.blockedCreate(v)
	if !ok {
		return checks.Draft{}, false
	}
	w := v.w
	d := p.frozenDraft(v, RootCauseAdmissionWebhookUnavailable, j.Evidence(p.webhooks(), "the creates of its pods")...)
	d.Message = fmt.Sprintf("The kruise-manager cannot create pods for %s %s/%s: every create is sent to %s (failurePolicy Fail), whose backend "+
		"cannot answer (%s), so the apiserver rejects it. %s.", w.Kind, w.Namespace, w.Name, j.Hook, j.Backend.Reason, j.Remedy())
	d.BlockedBy = j.BlockedBy()
	return d, true
}

// preNormalWebhookBlocks: whatever moves the pod out of PreparingNormal updates it (the
// kruise-manager patches its lifecycle label, a hook's owner removes its finalizer or label), and
// a webhook that fails closed, is called for that update and cannot be called rejects it
// (OpenKruise's own vpod.kb.io is called for pod updates).
func preNormalWebhookBlocks(p *pass, sp *stuckPod) (checks.Draft, bool) {
	env := p.webhooks()
	j, ok := env.Blocking(env.PodRequest(false, sp.pod.Namespace, sp.pod.Name, sp.pod.Labels))
	if !ok {
		return checks.Draft{}, false
	}
	d := sp.draft(RootCauseAdmissionWebhookUnavailable, j.Evidence(env, "the update that moves the pod out of PreparingNormal")...)
	d.Message = fmt.Sprintf("The pod leaves PreparingNormal by an update (the kruise-manager patches its lifecycle label, a hook's owner removes "+
		"its finalizer or label), and every such update is sent to %s (failurePolicy Fail), whose backend cannot answer (%s), so the apiserver "+
		"rejects it. %s.", j.Hook, j.Backend.Reason, j.Remedy())
	d.BlockedBy = j.BlockedBy()
	return d, true
}

// webhookAlsoDown names, when no kruise-manager leader runs, a webhook that rejects the pod write
// too (OpenKruise's own pod webhooks are served by the same manager): bringing the manager back
// must bring its webhook back as well.
func webhookAlsoDown(p *pass, req admission.Request, what string) []string {
	env := p.webhooks()
	j, ok := env.Blocking(req)
	if !ok {
		return nil
	}
	return append([]string{checks.Evidencef("%s is rejected too, while %s cannot be called:", what, j.Hook)}, j.Evidence(env, what)...)
}
