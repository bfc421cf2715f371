package terminating

import (
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// A Deployment deleted in the foreground once every dependent is gone waits for the garbage
// collector to remove foregroundDeletion with an update of the Deployment. A validating webhook
// with failurePolicy Fail on UPDATE of deployments calls a Service that no longer exists, so the
// apiserver rejects that update: the webhook is the root cause, named in blockedBy, with no fix.
// Around it: failurePolicy Ignore, a backend with a ready endpoint, a selector that leaves the
// object out, and rules for other resources leave the owner's own verdict.
func TestWebhookBlocksFinalizerRemoval(t *testing.T) {
	deployment := func() snapshot.Object {
		return deletedObject(deploymentsGVR, "Deployment", "shop", "target", 20*time.Minute, "", metav1.FinalizerDeleteDependents)
	}
	updates := checktest.Rules("UPDATE", "apps", "v1", "deployments")
	config := func(opts ...checktest.WebhookOption) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return checktest.ValidatingWebhooks("policy-engine", checktest.Webhook("validate.policy.example.com", "policy-system", "policy-engine", updates, opts...))
	}
	gone := map[string]*snapshot.BackendService{"policy-system/policy-engine": checktest.Backend("policy-system", "policy-engine", nil)}
	svc := checktest.WebhookServiceObject("policy-system", "policy-engine")
	up := map[string]*snapshot.BackendService{"policy-system/policy-engine": checktest.Backend("policy-system", "policy-engine", svc,
		checktest.EndpointSlice(svc, "https", 1, 0, 0))}
	world := func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, services map[string]*snapshot.BackendService) checktest.Cluster {
		return checktest.Cluster{Objects: []snapshot.Object{deployment()}, Namespaces: []*corev1.Namespace{checktest.Namespace("shop")},
			Admission: snapshot.Admission{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{cfg}, Services: services}}
	}
	for _, tc := range []struct {
		name string
		c    checktest.Cluster
		want want
	}{
		{"service gone", world(config(), gone), want{rootCause: RootCauseAdmissionWebhookUnavailable,
			summary: []string{"webhook validate.policy.example.com rejects the update that removes finalizer foregroundDeletion"},
			evidence: []string{"is sent to ValidatingWebhookConfiguration policy-engine, webhook validate.policy.example.com (failurePolicy Fail): rule UPDATE",
				"1 object(s) being deleted are held behind this webhook: Deployment shop/target"}}},
		{"failurePolicy Ignore", world(config(checktest.FailurePolicy(admissionregistrationv1.Ignore)), gone),
			want{rootCause: RootCauseFinalizerOwnerNotActing}},
		{"backend up", world(config(), up), want{rootCause: RootCauseFinalizerOwnerNotActing}},
		{"selector leaves it out", world(config(checktest.ObjectSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"policy": "enforced"}})), gone),
			want{rootCause: RootCauseFinalizerOwnerNotActing}},
		{"other resources", checktest.Cluster{Objects: []snapshot.Object{deployment()},
			Admission: snapshot.Admission{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{
				checktest.ValidatingWebhooks("policy-engine", checktest.Webhook("validate.policy.example.com", "policy-system", "policy-engine",
					checktest.Rules("UPDATE", "", "v1", "configmaps")))}, Services: gone}},
			want{rootCause: RootCauseFinalizerOwnerNotActing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := New().Run(tc.c.Snapshot(), 5*time.Minute)
			expect(t, fs, "target", tc.want)
			if tc.want.rootCause == RootCauseAdmissionWebhookUnavailable {
				f, _ := find(fs, "target")
				if len(f.BlockedBy) != 1 || f.BlockedBy[0].Kind != "ValidatingWebhookConfiguration" || f.BlockedBy[0].Name != "policy-engine" || len(f.Fixes) != 0 {
					t.Errorf("blockedBy %+v fixes %+v", f.BlockedBy, f.Fixes)
				}
			}
		})
	}
}

// The blast radius of one failing webhook: every object being deleted whose finalizer removal it
// is called for, across namespaces, and the requests its configuration sends it. A deleted object
// of another resource, and one in the namespace its selector leaves out, are not counted and keep
// their own verdict. No finding offers a fix: the write a fix would make is rejected the same way,
// and restoring the backend or deleting the configuration is a person's decision.
func TestWebhookBlastRadius(t *testing.T) {
	const fg = metav1.FinalizerDeleteDependents
	rules := append(checktest.Rules("CREATE,UPDATE", "apps", "v1", "deployments"), checktest.Rules("UPDATE", "", "v1", "configmaps")[0])
	rules[1].Scope = ptr.To(admissionregistrationv1.NamespacedScope)
	notOwn := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"policy-system"}}}}
	cfg := checktest.ValidatingWebhooks("policy-engine", checktest.Webhook("validate.policy.example.com", "policy-system", "policy-engine", rules,
		checktest.NamespaceSelector(notOwn)))
	c := checktest.Cluster{
		Objects: []snapshot.Object{
			deletedObject(deploymentsGVR, "Deployment", "shop", "web", 20*time.Minute, "", fg),
			deletedObject(deploymentsGVR, "Deployment", "shop", "api", 20*time.Minute, "", fg),
			deletedObject(deploymentsGVR, "Deployment", "billing", "invoices", 20*time.Minute, "", fg),
			deletedObject(deploymentsGVR, "Deployment", "policy-system", "engine", 20*time.Minute, "", fg),
			deletedObject(widgetsGVR, "Widget", "shop", "gadget", 20*time.Minute, "", fg),
		},
		Namespaces: []*corev1.Namespace{checktest.Namespace("shop"), checktest.Namespace("billing"), checktest.Namespace("policy-system")},
		Admission: snapshot.Admission{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{cfg},
			Services: map[string]*snapshot.BackendService{"policy-system/policy-engine": checktest.Backend("policy-system", "policy-engine", nil)}},
	}
	fs := New().Run(c.Snapshot(), 5*time.Minute)
	for _, name := range []string{"web", "api", "invoices"} {
		expect(t, fs, name, want{rootCause: RootCauseAdmissionWebhookUnavailable, evidence: []string{
			"while its backend cannot answer it rejects every request it is called for: CREATE,UPDATE apps/v1 deployments; UPDATE core/v1 configmaps (Namespaced), " +
				"where namespaceSelector kubernetes.io/metadata.name notin (policy-system)",
			"3 object(s) being deleted are held behind this webhook: Deployment billing/invoices, Deployment shop/api, Deployment shop/web"}})
		if f, _ := find(fs, name); len(f.Fixes) != 0 {
			t.Errorf("%s offers fixes %+v", name, f.Fixes)
		}
	}
	expect(t, fs, "engine", want{rootCause: RootCauseFinalizerOwnerNotActing})
	expect(t, fs, "gadget", want{rootCause: RootCauseFinalizerOwnerNotActing})
	for _, rc := range New().Info().RootCauses {
		if rc.ID == RootCauseAdmissionWebhookUnavailable && len(rc.Actions) != 0 {
			t.Errorf("%s offers actions %v: no fix of a webhook is applied for the user", rc.ID, rc.Actions)
		}
	}
}

// Writes the webhook refused to other controllers count in its blast radius when Warning events
// quote it by a name no other webhook that fails closed carries: the ReplicaSet controller's pod creations
// (FailedCreate, the apiserver's rejection as the message), once per object; an event on an
// object already held is not counted twice, and one quoting another webhook is not counted.
func TestWebhookRefusedWrites(t *testing.T) {
	const name = "validate.policy.example.com"
	deployment := deletedObject(deploymentsGVR, "Deployment", "shop", "target", 20*time.Minute, "", metav1.FinalizerDeleteDependents)
	refusal := func(kind, obj, webhook string) *corev1.Event {
		return checktest.Event(corev1.ObjectReference{APIVersion: "apps/v1", Kind: kind, Namespace: "shop", Name: obj}, corev1.EventTypeWarning, "FailedCreate",
			fmt.Sprintf(`Error creating: Internal error occurred: failed calling webhook %q: failed to call webhook: Post "https://policy-engine.policy-system.svc:443/validate?timeout=10s": service "policy-engine" not found`, webhook))
	}
	events := []*corev1.Event{refusal("ReplicaSet", "web-5d8f", name), refusal("ReplicaSet", "web-5d8f", name),
		refusal("ReplicaSet", "api-7c4b", name), refusal("Deployment", "target", name), refusal("ReplicaSet", "other-1", "other.example.com")}
	world := func(configs ...*admissionregistrationv1.ValidatingWebhookConfiguration) checktest.Cluster {
		return checktest.Cluster{Objects: []snapshot.Object{deployment}, Namespaces: []*corev1.Namespace{checktest.Namespace("shop")}, Events: events,
			Admission: snapshot.Admission{ValidatingWebhooks: configs,
				Services: map[string]*snapshot.BackendService{"policy-system/policy-engine": checktest.Backend("policy-system", "policy-engine", nil)}}}
	}
	hook := func(config string, rules []admissionregistrationv1.RuleWithOperations) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return checktest.ValidatingWebhooks(config, checktest.Webhook(name, "policy-system", "policy-engine", rules))
	}
	updates := checktest.Rules("CREATE,UPDATE", "apps,", "v1", "deployments,pods")
	const line = "other object(s) had writes refused by it"
	fs := New().Run(world(hook("policy-engine", updates)).Snapshot(), 5*time.Minute)
	expect(t, fs, "target", want{rootCause: RootCauseAdmissionWebhookUnavailable, evidence: []string{
		"1 object(s) being deleted are held behind this webhook: Deployment shop/target",
		"2 " + line + ", as recent Warning events record: ReplicaSet shop/api-7c4b (FailedCreate), ReplicaSet shop/web-5d8f (FailedCreate)"}})

	// A second configuration's webhook of that name with failurePolicy Ignore fails open: it
	// cannot have refused anything, and the refusals are still this one's.
	lenient := hook("policy-lenient", updates)
	lenient.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	fs = New().Run(world(hook("policy-engine", updates), lenient).Snapshot(), 5*time.Minute)
	expect(t, fs, "target", want{rootCause: RootCauseAdmissionWebhookUnavailable, evidence: []string{"2 " + line}})

	// Two that fail closed: the events cannot say which refused.
	fs = New().Run(world(hook("policy-engine", updates), hook("policy-engine-audit", checktest.Rules("CREATE", "", "v1", "configmaps"))).Snapshot(), 5*time.Minute)
	expect(t, fs, "target", want{rootCause: RootCauseAdmissionWebhookUnavailable, noEvid: []string{line}})
}
