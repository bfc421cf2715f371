package terminating

import (
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
