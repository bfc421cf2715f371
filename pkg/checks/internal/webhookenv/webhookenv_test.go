package webhookenv

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// A refused CloneSet create as kruise records it (createPods, cloneset_scale.go: the error, then a
// dump of the pod) and the same webhook name in two configurations, one of which leaves the pods
// out by its objectSelector: names are unique only within a configuration, and the one called
// for the write is the one the apiserver quoted.
func TestQuotedAndBlocking(t *testing.T) {
	const msg = `failed to create pod: Internal error occurred: failed calling webhook "validate.policy.example.com": service "engine" not found, ` +
		`pod: {"spec":{"containers":[{"env":[{"name":"TOKEN","value":"s3cr3t"}]}]}}`
	pods := checktest.Rules("CREATE,UPDATE", "", "v1", "pods")
	other := checktest.ValidatingWebhooks("other", checktest.Webhook("validate.policy.example.com", "policy", "engine", pods,
		checktest.ObjectSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}})))
	engine := checktest.ValidatingWebhooks("engine", checktest.Webhook("validate.policy.example.com", "policy", "engine", pods))
	cs := checktest.Workload(t, "CloneSet", "shop", "web")
	s := checktest.Cluster{Namespaces: []*corev1.Namespace{checktest.Namespace("shop")},
		Events: []*corev1.Event{checktest.Event(checktest.RefTo("apps.kruise.io/v1alpha1", "CloneSet", cs), corev1.EventTypeWarning, "FailedCreate", msg,
			checktest.Seen(time.Minute, time.Minute))},
		Admission: snapshot.Admission{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{other, engine},
			Services: map[string]*snapshot.BackendService{"policy/engine": checktest.Backend("policy", "engine", nil)}}}.Snapshot()
	e := New(s)
	create := e.PodRequest(true, "shop", "", map[string]string{"app": "web"})
	j, ok := e.Quoted(msg, create)
	if !ok || j.Hook.Config != "engine" || j.Match.Verdict != admission.Matched || !j.Blocks() {
		t.Fatalf("Quoted = %+v, %v; want configuration engine, matched and blocking", j, ok)
	}
	all := strings.Join(j.Evidence(e, "the creates"), "\n")
	if strings.Contains(all, "s3cr3t") || !strings.Contains(all, "recent events show it refused writes of 1 object(s): CloneSet shop/web") {
		t.Errorf("evidence:\n%s", all)
	}
	if b, ok := e.Blocking(e.PodRequest(false, "shop", "web-a", map[string]string{"app": "web"})); !ok || b.Hook.Config != "engine" {
		t.Errorf("Blocking = %+v, %v; want configuration engine", b, ok)
	}
	// A namespace whose labels were not read leaves a namespaceSelector undecided: not a blocker.
	scoped := checktest.ValidatingWebhooks("scoped", checktest.Webhook("scoped.example.com", "policy", "engine", pods,
		checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"policy": "on"}})))
	s.Admission.ValidatingWebhooks = []*admissionregistrationv1.ValidatingWebhookConfiguration{scoped}
	e = New(s)
	if b, ok := e.Blocking(e.PodRequest(true, "unread", "", nil)); ok {
		t.Errorf("Blocking in a namespace not read = %+v", b)
	}
	if _, ok := e.Quoted("pods is forbidden: exceeded quota: compute", create); ok {
		t.Error("a quota refusal names no webhook")
	}
}

// Failing, FailingClosed and Refused are what the stuck-terminating check attributes refusals
// with: both configurations' webhooks fail closed on a Service that is gone, so the name the
// event quotes is carried twice, and the refused CloneSet is listed once with its event's reason.
func TestFailingAndRefused(t *testing.T) {
	const msg = `Internal error occurred: failed calling webhook "validate.policy.example.com": service "engine" not found`
	pods := checktest.Rules("CREATE,UPDATE", "", "v1", "pods")
	other := checktest.ValidatingWebhooks("other", checktest.Webhook("validate.policy.example.com", "policy", "engine", pods))
	engine := checktest.ValidatingWebhooks("engine", checktest.Webhook("validate.policy.example.com", "policy", "engine", pods))
	cs := checktest.Workload(t, "CloneSet", "shop", "web")
	seen := checktest.Seen(time.Minute, time.Minute)
	s := checktest.Cluster{Namespaces: []*corev1.Namespace{checktest.Namespace("shop")},
		Events: []*corev1.Event{
			checktest.Event(checktest.RefTo("apps.kruise.io/v1alpha1", "CloneSet", cs), corev1.EventTypeWarning, "FailedCreate", msg, seen),
			checktest.Event(checktest.RefTo("apps.kruise.io/v1alpha1", "CloneSet", cs), corev1.EventTypeWarning, "FailedUpdate", msg, seen)},
		Admission: snapshot.Admission{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{other, engine},
			Services: map[string]*snapshot.BackendService{"policy/engine": checktest.Backend("policy", "engine", nil)}}}.Snapshot()
	e := New(s)
	if f := e.Failing(); len(f) != 2 || f[0].Hook.Config != "other" || f[1].Hook.Config != "engine" {
		t.Errorf("Failing = %+v, want both configurations in the order read", f)
	}
	if n := e.FailingClosed("validate.policy.example.com"); n != 2 {
		t.Errorf("FailingClosed = %d, want 2", n)
	}
	if r := e.Refused("validate.policy.example.com"); len(r) != 1 || r[0] != (Refusal{Object: "CloneSet shop/web", Reason: "FailedCreate"}) {
		t.Errorf("Refused = %+v, want the CloneSet once, with its first event's reason", r)
	}
}
