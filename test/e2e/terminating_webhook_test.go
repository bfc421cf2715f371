package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// webhookBlocksRemoval: a policy engine was uninstalled and left its ValidatingWebhookConfiguration
// behind (UPDATE of deployments, failurePolicy Fail, its Service gone). A Deployment deleted with
// --cascade=foreground loses its ReplicaSet, and then the real garbage collector cannot remove
// foregroundDeletion: the apiserver rejects that update, `failed calling webhook` (the GC's
// attemptToDeleteItem patches the owner's finalizers, pkg/controller/garbagecollector, v1.37.1).
// The finding names the webhook as the root in blockedBy and offers no fix. Its blast radius also
// counts a ReplicaSet whose pod creations the same webhook refuses: the ReplicaSet controller
// records each as a FailedCreate Warning event quoting the apiserver's `failed calling webhook`
// (RealPodControl.createPods, pkg/controller/controller_utils.go, v1.37.1). Neighbours: the same
// webhook with failurePolicy Ignore, and a namespace its selector leaves out: both deletions finish.
// Deleting the configuration lets the garbage collector finish the first one too.
func (e *teEnv) webhookBlocksRemoval(t *testing.T) {
	const ns, lenient, other = "st-webhook", "st-webhook-ignore", "st-webhook-other"
	for _, n := range []string{ns, lenient, other} {
		e.namespace(t, n)
	}
	for _, n := range []string{ns, lenient, other} {
		if _, err := e.cs.AppsV1().Deployments(n).Create(e.ctx, kwokDeployment("web", 0), metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, "the Deployments' ReplicaSets", func(ctx context.Context) (bool, error) {
		for _, n := range []string{ns, lenient, other} {
			l, err := e.cs.AppsV1().ReplicaSets(n).List(ctx, metav1.ListOptions{})
			if err != nil || len(l.Items) == 0 {
				return false, err
			}
		}
		return true, nil
	})
	e.policyWebhook(t, "policy-engine", ns, admissionregistrationv1.Fail)
	e.policyWebhook(t, "policy-lenient", lenient, admissionregistrationv1.Ignore)

	// A ReplicaSet created now: every pod it creates is refused.
	worker := kwokDeployment("worker", 1)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: appsv1.ReplicaSetSpec{Replicas: worker.Spec.Replicas, Selector: worker.Spec.Selector, Template: worker.Spec.Template}}
	if _, err := e.cs.AppsV1().ReplicaSets(ns).Create(e.ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the ReplicaSet controller's FailedCreate quoting the webhook", func(ctx context.Context) (bool, error) {
		l, err := e.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=worker,reason=FailedCreate"})
		if err != nil {
			return false, err
		}
		for _, ev := range l.Items {
			if strings.Contains(ev.Message, `failed calling webhook "validate.policy.example.com"`) {
				return true, nil
			}
		}
		return false, nil
	})

	fg := metav1.DeletePropagationForeground
	for _, n := range []string{ns, lenient, other} {
		if err := e.cs.AppsV1().Deployments(n).Delete(e.ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{lenient, other} {
		e.waitDeploymentGone(t, n)
	}
	eventually(t, time.Minute, "the ReplicaSet of "+ns+"/web to be gone and the Deployment held", func(ctx context.Context) (bool, error) {
		l, err := e.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(l.Items) > 0 {
			return false, err
		}
		d, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.DeletionTimestamp != nil && len(d.Finalizers) == 1, err
	})

	rep := e.scan(t, ns, 2)
	f := teFind(t, rep, "Deployment", "web")
	assertFinding(t, f, "admission-webhook-unavailable", report.SeverityError,
		[]string{"the update that removes finalizer foregroundDeletion is sent to ValidatingWebhookConfiguration policy-engine, webhook validate.policy.example.com (failurePolicy Fail)",
			"while its backend cannot answer it rejects every request it is called for: UPDATE apps/v1 deployments; CREATE core/v1 pods, where namespaceSelector kubernetes.io/metadata.name=" + ns,
			"1 object(s) being deleted are held behind this webhook: Deployment " + ns + "/web",
			"1 other object(s) had writes refused by it, as recent Warning events record: ReplicaSet " + ns + "/worker (FailedCreate)"}, nil)
	if len(f.BlockedBy) != 1 || f.BlockedBy[0].Kind != "ValidatingWebhookConfiguration" || f.BlockedBy[0].Name != "policy-engine" {
		t.Errorf("blockedBy %+v, want the webhook configuration", f.BlockedBy)
	}
	if !strings.Contains(f.Summary, "rejects the update that removes finalizer foregroundDeletion") {
		t.Errorf("summary %q", f.Summary)
	}

	// What installed the webhook is gone for good: its configuration is deleted, and the garbage
	// collector's next attempt removes the finalizer.
	if err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(e.ctx, "policy-engine", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDeploymentGone(t, ns)
}

// policyWebhook is the webhook configuration a policy engine installs: UPDATE of deployments and
// CREATE of pods in namespace ns, calling its Service policy-system/policy-engine, which does not exist.
func (e *teEnv) policyWebhook(t *testing.T, name, ns string, policy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	none, path := admissionregistrationv1.SideEffectClassNone, "/validate"
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "validate.policy.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "policy-system", Name: "policy-engine", Path: &path}},
			Rules: []admissionregistrationv1.RuleWithOperations{
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}},
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			FailurePolicy:           &policy,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
		}}}
	if _, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(e.ctx, cfg, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
}

func (e *teEnv) waitDeploymentGone(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 2*time.Minute, "Deployment "+ns+"/web to be gone", func(ctx context.Context) (bool, error) {
		_, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
}
