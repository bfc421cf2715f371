// Package admission decides, from objects a scan read, which writes the cluster's admission
// webhooks are called for and whether the services behind them (and behind CRD conversion
// webhooks and aggregated APIs) can answer. It makes no API calls: it follows the apiserver's
// own rules (k8s.io/apiserver pkg/admission/plugin/webhook, v1.37) on what it is given.
//
// A webhook blocks a write when Matches says it is called for it, its failurePolicy is Fail
// (FailsClosed) and WebhookBackend finds its backend unavailable:
//
//	for _, w := range admission.Webhooks(s.Admission.ValidatingWebhooks, s.Admission.MutatingWebhooks) {
//		m := admission.Matches(w, admission.Update(gvr, obj, nsLabels))
//		if m.Verdict == admission.NoMatch || !w.FailsClosed() {
//			continue
//		}
//		svc, _ := s.BackendService(w.Service())
//		if b := admission.WebhookBackend(w, svc, failures); b.State == admission.Unavailable {
//			// m.Verdict Matched: the write is rejected; Conditional or Undecided: it may be.
//		}
//	}
//
// What cannot be decided from what was read (CEL matchConditions, equivalent resources the
// caller did not name, a namespace whose labels were not read) is said so, never guessed.
// See docs/domain.md, "Admission and conversion webhooks".
package admission
