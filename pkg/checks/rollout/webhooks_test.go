package rollout

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The apiserver's words when a webhook refuses a pod create (k8s.io/apiserver v1.37.1): a call
// that cannot be made is ErrCallingWebhook (pkg/util/webhook/error.go) wrapping the dispatcher's
// "failed to call webhook" and the proxy's error (service not found, no endpoints); a webhook
// that answered no is "admission webhook ... denied the request" (validating/dispatcher.go). The
// ReplicaSet controller copies the error into ReplicaFailure and a FailedCreate event "Error
// creating: ..." (manageReplicas, pkg/controller/replicaset/replica_set.go).
const (
	hookName       = "validate.policy.example.com"
	hookGone       = `Internal error occurred: failed calling webhook "validate.policy.example.com": failed to call webhook: Post "https://policy-engine.policy-system.svc:443/validate?timeout=10s": service "policy-engine" not found`
	hookNoEndpoint = `Internal error occurred: failed calling webhook "validate.policy.example.com": failed to call webhook: Post "https://policy-engine.policy-system.svc:443/validate?timeout=10s": no endpoints available for service "policy-engine"`
	hookDenied     = `admission webhook "validate.policy.example.com" denied the request: image registry.example.com/api:2.0 is not signed`
)

// refusedBy is Deployment shop/api with maxUnavailable 0 whose surge pod the apiserver refuses
// with msg, as the ReplicaFailure condition and the new ReplicaSet's FailedCreate event say.
func refusedBy(msg string, hooks *admissionregistrationv1.ValidatingWebhookConfiguration, services map[string]*snapshot.BackendService) ct.Cluster {
	failure := appsv1.DeploymentCondition{Type: conditionReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: msg,
		LastUpdateTime: metav1.NewTime(ct.Ago(12 * time.Minute)), LastTransitionTime: metav1.NewTime(ct.Ago(12 * time.Minute))}
	d := deployment(0, 3, progressingCondition(3*time.Minute), failure)
	d.Spec.Template.Labels = map[string]string{"app": "api"}
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromInt32(0))}
	old, cur := replicaSet(d, rsOld, "1", 3), replicaSet(d, rsNew, "2", 1)
	c := ct.Cluster{Deployments: []*appsv1.Deployment{d}, ReplicaSets: []*appsv1.ReplicaSet{old, cur},
		Pods:       []*corev1.Pod{rsPod(old, "api-5f7c9d8b6-a", time.Hour), rsPod(old, "api-5f7c9d8b6-b", time.Hour), rsPod(old, "api-5f7c9d8b6-c", time.Hour)},
		Namespaces: []*corev1.Namespace{ct.Namespace("shop")},
		Events: []*corev1.Event{ct.Event(ct.RefTo("apps/v1", "ReplicaSet", cur), corev1.EventTypeWarning, "FailedCreate",
			"Error creating: "+msg, ct.From("replicaset-controller"), ct.Count(14), ct.Seen(12*time.Minute, 30*time.Second))},
		Admission: snapshot.Admission{Services: services}}
	if hooks != nil {
		c.Admission.ValidatingWebhooks = []*admissionregistrationv1.ValidatingWebhookConfiguration{hooks}
	}
	return c
}

// A policy engine's webhook on pod creates, calling Service policy-system/policy-engine.
func policyHooks(opts ...ct.WebhookOption) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return ct.ValidatingWebhooks("policy-engine", ct.Webhook(hookName, "policy-system", "policy-engine", ct.Rules("CREATE", "", "v1", "pods"), opts...))
}

func engineService(ready, notReady int) map[string]*snapshot.BackendService {
	svc := ct.WebhookServiceObject("policy-system", "policy-engine")
	return map[string]*snapshot.BackendService{"policy-system/policy-engine": ct.Backend("policy-system", "policy-engine", svc,
		ct.EndpointSlice(svc, "https", ready, notReady, 0))}
}

var engineGone = map[string]*snapshot.BackendService{"policy-system/policy-engine": ct.Backend("policy-system", "policy-engine", nil)}

// A webhook with failurePolicy Fail on pod creates whose backend cannot answer is the root cause
// of the stalled rollout (admission-webhook-unavailable, as stuck-terminating names it), with its
// configuration and Service in blockedBy and no fix: the template is not at fault. A webhook
// that answered and denied leaves pod-creation-refused, naming its configuration and its
// backend, up. A refusal whose webhook the scan no longer finds as a blocker (removed, now
// Ignore, its selector no longer matching the pods) stays pod-creation-refused and says why.
func TestWebhookRefusesPodCreates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		c         ct.Cluster
		rootCause string
		evidence  []string
	}{
		{"service gone", refusedBy(hookGone, policyHooks(), engineGone), RootCauseAdmissionWebhookUnavailable, []string{
			"ValidatingWebhookConfiguration policy-engine, webhook validate.policy.example.com is called for the creates of its pods: rule CREATE core/v1 pods",
			"failurePolicy Fail, calls Service policy-system/policy-engine port 443",
			"Service policy-system/policy-engine: not found",
			"its backend is unavailable: Service policy-system/policy-engine does not exist",
			"recent events show it refused writes of 1 object(s): ReplicaSet shop/api-6d4b8c7f9"}},
		{"no ready endpoint", refusedBy(hookNoEndpoint, policyHooks(), engineService(0, 2)), RootCauseAdmissionWebhookUnavailable, []string{
			"Service policy-system/policy-engine port 443 (https): 0/2 endpoints ready",
			"its backend is unavailable: Service policy-system/policy-engine has no ready endpoint"}},
		{"match conditions", refusedBy(hookGone, policyHooks(ct.MatchConditions("not-system", "!request.userInfo.username.startsWith('system:node')")), engineGone),
			RootCauseAdmissionWebhookUnavailable, []string{"unless its matchConditions exclude them (not evaluated here): not-system:"}},
		{"denied", refusedBy(hookDenied, policyHooks(), engineService(2, 0)), RootCausePodCreationRefused, []string{
			"refused by AdmissionWebhook validate.policy.example.com: denied the request: image registry.example.com/api:2.0 is not signed",
			"ValidatingWebhookConfiguration policy-engine, webhook validate.policy.example.com is called for the creates of its pods",
			"its backend is available: Service policy-system/policy-engine has 2 ready endpoint(s)"}},
		{"denied by a URL webhook", refusedBy(hookDenied, policyHooks(ct.WebhookURL("https://policy.example.com/validate")), nil), RootCausePodCreationRefused, []string{
			"calls URL https://policy.example.com", "its backend is available: it answered the apiserver and denied the request"}},
		{"configuration removed since", refusedBy(hookGone, nil, nil), RootCausePodCreationRefused, []string{
			"no webhook configuration read has a webhook named validate.policy.example.com"}},
		{"now Ignore", refusedBy(hookGone, policyHooks(ct.FailurePolicy(admissionregistrationv1.Ignore)), engineGone), RootCausePodCreationRefused, []string{
			"failurePolicy Ignore"}},
		{"selector no longer matches", refusedBy(hookGone, policyHooks(ct.ObjectSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})), engineGone),
			RootCausePodCreationRefused, []string{"as read is not called for the creates of its pods (its objectSelector selects neither"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := only(t, run(t, tc.c, -1))
			if f.RootCause.ID != tc.rootCause || f.Severity != report.SeverityError || len(f.Fixes) != 0 {
				t.Fatalf("got %s %s fixes %v: %s\n%s", f.RootCause.ID, f.Severity, f.Fixes, f.RootCause.Message, strings.Join(f.RootCause.Evidence, "\n"))
			}
			for _, e := range tc.evidence {
				evidenceHas(t, f, e)
			}
			wantBlocked := []report.BlockRef{
				{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration", Name: "policy-engine"},
				{APIVersion: "v1", Kind: "Service", Namespace: "policy-system", Name: "policy-engine"}}
			if tc.rootCause != RootCauseAdmissionWebhookUnavailable {
				wantBlocked = nil
			}
			if len(f.BlockedBy) != len(wantBlocked) || len(wantBlocked) > 0 && (f.BlockedBy[0] != wantBlocked[0] || f.BlockedBy[1] != wantBlocked[1]) {
				t.Errorf("blockedBy %+v, want %+v", f.BlockedBy, wantBlocked)
			}
			if tc.rootCause == RootCauseAdmissionWebhookUnavailable &&
				(!strings.Contains(f.Summary, "webhook validate.policy.example.com rejects its new pods") || !strings.Contains(f.RootCause.Message, "delete ValidatingWebhookConfiguration policy-engine")) {
				t.Errorf("summary %q message %q", f.Summary, f.RootCause.Message)
			}
		})
	}
}

// A webhook that fails closed with its backend gone is not named where it plays no part: a
// rollout stalled on an image pull, whose pods the webhook's selector leaves out.
func TestWebhookNotNamedWhereItPlaysNoPart(t *testing.T) {
	d := deployment(1, 3, deadlineCondition(2*time.Minute))
	old, cur := replicaSet(d, rsOld, "1", 3), replicaSet(d, rsNew, "2", 1)
	c := ct.Cluster{Deployments: []*appsv1.Deployment{d}, ReplicaSets: []*appsv1.ReplicaSet{old, cur},
		Pods:       []*corev1.Pod{rsPod(old, "api-5f7c9d8b6-a", time.Hour), rsPod(cur, "api-6d4b8c7f9-x", 12*time.Minute, imagePull())},
		Namespaces: []*corev1.Namespace{ct.Namespace("shop")},
		Admission: snapshot.Admission{Services: engineGone, ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{
			policyHooks(ct.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"policy": "enforced"}}))}}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseImagePullFailing || len(f.BlockedBy) != 0 {
		t.Fatalf("got %s blockedBy %+v", f.RootCause.ID, f.BlockedBy)
	}
	if all := strings.Join(f.RootCause.Evidence, "\n"); strings.Contains(all, hookName) {
		t.Errorf("the webhook is named:\n%s", all)
	}
}
