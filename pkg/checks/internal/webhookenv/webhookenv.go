// Package webhookenv is what the checks know of the admission webhooks in one run: the webhooks
// the scan read, the recent failures to call them that Warning events quote, and which webhook
// holds a write a controller must make (a pod's creation, a finalizer's removal).
package webhookenv

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Pods is the resource a controller creates and updates pods in.
var Pods = corev1.SchemeGroupVersion.WithResource("pods")

// failedCall is how the webhook dispatchers word a call that could not be made
// (ErrCallingWebhook, k8s.io/apiserver pkg/util/webhook/error.go, v1.37.1).
var failedCall = regexp.MustCompile(`failed calling webhook "([^"]+)"`)

// Env is the webhooks of one scan, each backend judged at most once.
type Env struct {
	s     *snapshot.Snapshot
	hooks []admission.Webhook
	// failures are the Warning events' messages that quote a failed call, oldest first;
	// refused are, per webhook name, the objects those events are on.
	failures []string
	refused  map[string][]Refusal
	backends map[string]admission.Backend
}

// Refusal is an object whose write a Warning event says the apiserver refused, a webhook it
// quotes not being callable, with the event's reason (FailedCreate).
type Refusal struct {
	// Object is "Kind namespace/name", "Kind name" for a cluster-scoped object.
	Object string
	Reason string
}

// New reads the webhooks and the failures the snapshot's Warning events quote.
func New(s *snapshot.Snapshot) *Env {
	e := &Env{s: s, hooks: admission.Webhooks(s.Admission.ValidatingWebhooks, s.Admission.MutatingWebhooks),
		refused: map[string][]Refusal{}, backends: map[string]admission.Backend{}}
	events := make([]*corev1.Event, 0)
	for _, ev := range s.Events {
		if ev.Type == corev1.EventTypeWarning && failedCall.MatchString(ev.Message) {
			events = append(events, ev)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return snapshot.EventTime(events[i]).Before(snapshot.EventTime(events[j])) })
	seen := map[string]bool{}
	for _, ev := range events {
		// Kruise's FailedCreate events dump the pod, whose env evidence never prints.
		e.failures = append(e.failures, kruiseenv.EventMessage(ev.Message))
		name := failedCall.FindStringSubmatch(ev.Message)[1]
		o := ev.InvolvedObject
		obj := o.Kind + " " + o.Name
		if o.Namespace != "" {
			obj = o.Kind + " " + o.Namespace + "/" + o.Name
		}
		if !seen[name+"\x00"+obj] {
			seen[name+"\x00"+obj] = true
			e.refused[name] = append(e.refused[name], Refusal{Object: obj, Reason: ev.Reason})
		}
	}
	return e
}

// Judged is a webhook with its backend's state and how it matches a write.
type Judged struct {
	Hook    admission.Webhook
	Backend admission.Backend
	Match   admission.Match
}

// Blocks says whether the webhook rejects the write: it fails closed, is called for the write
// (the rules and selectors match, or only its matchConditions could exclude it), and its backend
// cannot answer.
func (j Judged) Blocks() bool {
	return j.Hook.FailsClosed() && j.Backend.State == admission.Unavailable &&
		(j.Match.Verdict == admission.Matched || j.Match.Verdict == admission.Conditional)
}

// Unread is why the webhooks could not be read; nil when they were.
func (e *Env) Unread() error {
	if err, ok := e.s.Unread[snapshot.InputAdmission]; ok {
		return err
	}
	return nil
}

// backend judges a webhook's backend once, with the failures the events quote and extra ones
// (a condition's message) counted too.
func (e *Env) backend(w admission.Webhook, extra ...string) admission.Backend {
	key := w.String() + "\x00" + strings.Join(extra, "\x00")
	if b, ok := e.backends[key]; ok {
		return b
	}
	failures := append([]string{}, e.failures...)
	for _, x := range extra {
		x = kruiseenv.EventMessage(x)
		// A condition's message that an event quotes already is one failure, not two.
		if !slices.ContainsFunc(e.failures, func(f string) bool { return strings.Contains(f, x) }) {
			failures = append(failures, x)
		}
	}
	b := admission.WebhookBackend(w, e.s, failures)
	e.backends[key] = b
	return b
}

// Named returns the webhook of that name the apiserver quoted, judged for the write req: of the
// webhooks read with that name (names are unique only within a configuration), the one that
// matches the write, else the first. quoted are messages that quote it (a condition's), counted
// as recent failures.
func (e *Env) Named(name string, req admission.Request, quoted ...string) (Judged, bool) {
	var found *Judged
	for _, w := range e.hooks {
		if w.Name != name {
			continue
		}
		j := Judged{Hook: w, Match: admission.Matches(w, req)}
		if found == nil || found.Match.Verdict == admission.NoMatch && j.Match.Verdict != admission.NoMatch {
			found = &j
		}
	}
	if found == nil {
		return Judged{}, false
	}
	found.Backend = e.backend(found.Hook, quoted...)
	return *found, true
}

// Quoted returns the webhook a message quotes as failing to call (`failed calling webhook
// "NAME"`), judged for the write req with the message counted as a recent failure.
func (e *Env) Quoted(msg string, req admission.Request) (Judged, bool) {
	m := failedCall.FindStringSubmatch(msg)
	if m == nil {
		return Judged{}, false
	}
	return e.Named(m[1], req, msg)
}

// Failing returns the webhooks that fail closed and whose backend cannot answer, in the order
// read: whatever request they are called for is rejected.
func (e *Env) Failing() []Judged {
	var out []Judged
	for _, w := range e.hooks {
		if !w.FailsClosed() {
			continue
		}
		if b := e.backend(w); b.State == admission.Unavailable {
			out = append(out, Judged{Hook: w, Backend: b})
		}
	}
	return out
}

// FailingClosed counts the webhooks read with that name that fail closed. The apiserver's
// refusal names the webhook, not its configuration, and names are unique only within one; a
// webhook with failurePolicy Ignore fails open without an error to the client, so it never
// leaves such a refusal.
func (e *Env) FailingClosed(name string) int {
	n := 0
	for _, w := range e.hooks {
		if w.Name == name && w.FailsClosed() {
			n++
		}
	}
	return n
}

// Refused returns the objects whose writes Warning events say a webhook of that name refused,
// once per object, the oldest event's reason.
func (e *Env) Refused(name string) []Refusal { return e.refused[name] }

// Blocking returns the first webhook that blocks the write req (see Judged.Blocks).
func (e *Env) Blocking(req admission.Request) (Judged, bool) {
	for _, w := range e.hooks {
		if !w.FailsClosed() {
			continue
		}
		j := Judged{Hook: w, Match: admission.Matches(w, req)}
		if j.Match.Verdict != admission.Matched && j.Match.Verdict != admission.Conditional {
			continue
		}
		if j.Backend = e.backend(w); j.Blocks() {
			return j, true
		}
	}
	return Judged{}, false
}

// PodRequest is the write of a pod in namespace ns with the labels, with the namespace's labels
// when the scan read them.
func (e *Env) PodRequest(create bool, ns, name string, labels map[string]string) admission.Request {
	return e.Request(create, Pods, &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels})
}

// Request is the write of m through res, a create or an update, with its namespace's labels
// when the scan read them.
func (e *Env) Request(create bool, res schema.GroupVersionResource, m metav1.Object) admission.Request {
	var nsLabels map[string]string
	if n, ok := e.s.Namespace(m.GetNamespace()); ok {
		nsLabels = n.Labels
	}
	if create {
		return admission.Create(res, m, nsLabels)
	}
	return admission.Update(res, m, nsLabels)
}

// Evidence says which configuration the webhook is in, how it matches the write (what), its
// backend's state and why, and which objects recent events show it refused.
func (j Judged) Evidence(e *Env, what string) []string {
	var out []string
	switch m := j.Match; m.Verdict {
	case admission.Matched:
		out = append(out, checks.Evidencef("%s is called for %s: rule %s", j.Hook, what, m.Rule))
	case admission.Conditional:
		out = append(out, checks.Evidencef("%s is called for %s (rule %s) unless its matchConditions exclude them (not evaluated here): %s",
			j.Hook, what, m.Rule, strings.Join(m.Conditions, "; ")))
	case admission.Undecided:
		out = append(out, checks.Evidencef("%s may be called for %s: %s", j.Hook, what, m.Why))
	default:
		out = append(out, checks.Evidencef("%s as read is not called for %s (%s): it was changed since, or the write differs", j.Hook, what, m.Why))
	}
	out = append(out, j.Backend.Evidence...)
	out = append(out, checks.Evidencef("its backend is %s: %s", j.Backend.State, j.Backend.Reason))
	if refused := e.refused[j.Hook.Name]; len(refused) > 0 {
		objs := make([]string, len(refused))
		for i, r := range refused {
			objs[i] = r.Object
		}
		out = append(out, checks.Evidencef("recent events show it refused writes of %d object(s): %s", len(objs), strings.Join(firstN(objs, 5), ", ")))
	}
	return out
}

// BlockedBy names the webhook's configuration, and the Service it calls, as what holds the write.
func (j Judged) BlockedBy() []report.BlockRef {
	out := []report.BlockRef{{APIVersion: "admissionregistration.k8s.io/v1", Kind: j.Hook.Kind, Name: j.Hook.Config}}
	if ref := j.Hook.ClientConfig.Service; ref != nil {
		out = append(out, report.BlockRef{APIVersion: "v1", Kind: "Service", Namespace: ref.Namespace, Name: ref.Name})
	}
	return out
}

// Remedy is what a person does about a webhook that fails closed and cannot be called.
func (j Judged) Remedy() string {
	return fmt.Sprintf("Restore the webhook's backend (what it calls, and the pods behind it); if what installed the webhook is gone "+
		"for good, delete %s %s, once you are sure the control it enforced is no longer wanted", j.Hook.Kind, j.Hook.Config)
}

func firstN(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(items[:n:n], fmt.Sprintf("and %d more", len(items)-n))
}
