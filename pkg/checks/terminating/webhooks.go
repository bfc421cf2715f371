package terminating

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/webhookenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// failingWebhooks are the webhooks that reject every request they are called for: failurePolicy
// Fail and a backend that cannot answer (webhookenv judges each backend once, with the failures
// Warning events quote). blocked counts, per webhook, the objects being deleted whose finalizer
// removal it is called for: how far its outage reaches. refused are, per webhook, the other
// objects whose writes Warning events say it refused (a ReplicaSet's pod creations).
type failingWebhooks struct {
	env     *webhookenv.Env
	hooks   []webhookenv.Judged
	blocked map[string][]string
	refused map[string][]string
}

// failingHooks judges the webhooks once per run.
func (a *pass) failingHooks() *failingWebhooks {
	if a.failing != nil {
		return a.failing
	}
	env := webhookenv.New(a.s)
	a.failing = &failingWebhooks{env: env, hooks: env.Failing(), blocked: map[string][]string{}, refused: map[string][]string{}}
	if len(a.failing.hooks) > 0 {
		a.countBlocked()
		a.countRefused()
	}
	return a.failing
}

// countRefused records, for each failing webhook, the objects of Warning events that quote
// `failed calling webhook "NAME"`: with failurePolicy Fail that message is the apiserver's
// rejection of the write (dispatcher.go, Dispatch, k8s.io/apiserver v1.37.1), and the event is on
// the object whose controller made it. The message names the webhook, not its configuration, so
// only a name no other webhook that fails closed carries is attributed. Objects already held
// behind it are not counted again.
func (a *pass) countRefused() {
	env := a.failing.env
	for _, f := range a.failing.hooks {
		if env.FailingClosed(f.Hook.Name) != 1 {
			continue
		}
		key := f.Hook.String()
		seen := map[string]bool{}
		for _, held := range a.failing.blocked[key] {
			seen[held] = true // counted once, as held
		}
		for _, r := range env.Refused(f.Hook.Name) {
			if !seen[r.Object] {
				seen[r.Object] = true
				a.failing.refused[key] = append(a.failing.refused[key], r.Object+" ("+r.Reason+")")
			}
		}
	}
}

// removalBlockedBy returns the failing webhook called for the update that removes a finalizer
// of the object (a PATCH of its metadata, admitted as UPDATE of the object itself), with how it
// matched. A webhook whose matchConditions decide is returned too: it is called unless they
// exclude the object, which the match says.
func (a *pass) removalBlockedBy(res schema.GroupVersionResource, m metav1.Object) (webhookenv.Judged, bool) {
	if res.Resource == "" || len(m.GetFinalizers()) == 0 {
		return webhookenv.Judged{}, false
	}
	return a.failing.env.Blocking(a.failing.env.Request(false, res, m))
}

// countBlocked counts, for each failing webhook, the objects being deleted that it holds.
func (a *pass) countBlocked() {
	add := func(res schema.GroupVersionResource, kind string, m metav1.Object) {
		if f, ok := a.removalBlockedBy(res, m); ok {
			key := f.Hook.String()
			a.failing.blocked[key] = append(a.failing.blocked[key], kind+" "+objectName(m))
		}
	}
	for _, p := range a.pods() {
		if p.DeletionTimestamp != nil {
			add(webhookenv.Pods, "Pod", p)
		}
	}
	for _, o := range a.s.Objects {
		if o.Meta != nil && o.Meta.DeletionTimestamp != nil {
			add(o.Resource, o.Kind, o.Meta)
		}
	}
}

func objectName(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// webhookBlocksRemoval: the finalizer's owner removes it with an UPDATE of the object, and an
// admission webhook with failurePolicy Fail is called for that update while its backend cannot
// answer, so the apiserver rejects it: `failed calling webhook` (dispatcher.go, Dispatch, in
// k8s.io/apiserver pkg/admission/plugin/webhook/validating and mutating, v1.37.1). The owner is
// not at fault, and removing the finalizer by hand is the same rejected write: no fix. The
// webhook configuration is the root in blockedBy.
func (a *pass) webhookBlocksRemoval(t *target) (checks.Draft, bool) {
	if len(a.failingHooks().hooks) == 0 {
		return checks.Draft{}, false
	}
	f, ok := a.removalBlockedBy(t.resource, t.meta)
	if !ok {
		return checks.Draft{}, false
	}
	w, match := f.Hook, f.Match
	fins := strings.Join(t.meta.GetFinalizers(), ", ")
	ev := []string{checks.Evidencef("the update that removes finalizer %s is sent to %s (failurePolicy Fail): rule %s", fins, w, match.Rule)}
	if match.Verdict == admission.Conditional {
		ev = append(ev, checks.Evidencef("unless its matchConditions exclude this object (not evaluated here): %s", strings.Join(match.Conditions, "; ")))
	}
	ev = append(ev, f.Backend.Evidence...)
	// The blast radius: what the webhook rejects while it is down, and the deletions it holds now.
	blocked := a.failing.blocked[w.String()]
	sort.Strings(blocked)
	ev = append(ev, checks.Evidencef("while its backend cannot answer it rejects every request it is called for: %s", w.Reach()))
	ev = append(ev, checks.Evidencef("%d object(s) being deleted are held behind this webhook: %s", len(blocked), strings.Join(firstN(blocked, 5), ", ")))
	if refused := a.failing.refused[w.String()]; len(refused) > 0 {
		sort.Strings(refused)
		ev = append(ev, checks.Evidencef("%d other object(s) had writes refused by it, as recent Warning events record: %s", len(refused), strings.Join(firstN(refused, 5), ", ")))
	}
	ev = append(ev, a.warningEvents(t.kind, t.meta, 3)...)
	return checks.Draft{
		RootCause: RootCauseAdmissionWebhookUnavailable,
		Summary: fmt.Sprintf("%s for %s: webhook %s rejects the update that removes finalizer %s (%s)", t.noun,
			checks.Age(a.now, t.meta.GetDeletionTimestamp().Time), w.Name, fins, f.Backend.Reason),
		Message: fmt.Sprintf("Whoever owns finalizer %s removes it with an update of the object, and every such update is sent to %s, "+
			"whose backend cannot answer: %s. With failurePolicy Fail the apiserver rejects the update, so the deletion cannot finish, "+
			"and removing the finalizer by hand is rejected the same way. Restore the webhook's backend (its Service and the pods behind "+
			"it); if what installed the webhook is gone for good, delete the %s %s, once you are sure the control it enforced is no "+
			"longer wanted.", fins, w, f.Backend.Reason, w.Kind, w.Config),
		Evidence:  ev,
		BlockedBy: []report.BlockRef{{APIVersion: "admissionregistration.k8s.io/v1", Kind: w.Kind, Name: w.Config}},
	}, true
}

func firstN(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(items[:n:n], fmt.Sprintf("and %d more", len(items)-n))
}
