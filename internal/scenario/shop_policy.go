package scenario

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The policy engine of the story (Kyverno) and what its admission controller registers at run time:
// the webhook configuration is not part of its Helm release, so uninstalling the release and its
// namespace leaves the configuration behind, calling a Service that is gone.
const (
	policyNamespace = "kyverno"
	policyService   = "kyverno-svc"
	// PolicyWebhookConfig is the ValidatingWebhookConfiguration the engine leaves behind.
	PolicyWebhookConfig = "kyverno-resource-validating-webhook-cfg"
	// PolicyWebhook is its webhook for the policies that fail closed.
	PolicyWebhook = "validate.kyverno.svc-fail"
	// Ledger is the StatefulSet retired after the engine was uninstalled.
	Ledger = "ledger"
)

// policyEngine: the ledger runs as a StatefulSet; the policy engine, whose one enforced policy
// covers StatefulSets, is uninstalled with its namespace and leaves its webhook configuration; the
// ledger is then retired with `kubectl delete statefulset --cascade=foreground`. The garbage
// collector deletes the pods and revisions, then removes foregroundDeletion with a patch of the
// StatefulSet (processDeletingDependentsItem -> removeFinalizer, pkg/controller/garbagecollector,
// kubernetes v1.37.1), which admission sees as UPDATE: the webhook is called, its Service does not
// exist, and with failurePolicy Fail the apiserver rejects the patch. It runs before the legacy
// APIService breaks discovery, which would hold the engine's namespace too.
func (b *builder) policyEngine(ctx context.Context, shop *Shop) error {
	kube := b.env.Kube
	labels := map[string]string{"app": Ledger}
	replicas := int32(2)
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Ledger, Labels: labels},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: Ledger, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: podSpec("main", "registry.shop.example/ledger:3.1.0", nil)}},
	}
	if _, err := kube.AppsV1().StatefulSets(Namespace).Create(ctx, sts, metav1.CreateOptions{FieldManager: applyManager}); err != nil {
		return fmt.Errorf("create StatefulSet %s: %w", Ledger, err)
	}
	err := poll(ctx, 2*time.Minute, "StatefulSet "+Ledger+" to run its pods", func(ctx context.Context) (bool, error) {
		got, err := kube.AppsV1().StatefulSets(Namespace).Get(ctx, Ledger, metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.ReadyReplicas == replicas, err
	})
	if err != nil {
		return err
	}

	// The engine's namespace and Service, and the configuration its admission controller writes.
	if err := b.namespace(ctx, policyNamespace); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: policyNamespace, Name: policyService},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/component": "admission-controller"},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}}}}
	if _, err := kube.CoreV1().Services(policyNamespace).Create(ctx, svc, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", policyNamespace, policyService, err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, policyWebhookConfig(),
		metav1.CreateOptions{FieldManager: "kyverno"}); err != nil {
		return fmt.Errorf("create ValidatingWebhookConfiguration %s: %w", PolicyWebhookConfig, err)
	}
	// `helm uninstall` and `kubectl delete namespace kyverno`: the configuration stays.
	if err := kube.CoreV1().Namespaces().Delete(ctx, policyNamespace, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete namespace %s: %w", policyNamespace, err)
	}
	err = poll(ctx, 2*time.Minute, "namespace "+policyNamespace+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, policyNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return err
	}

	fg := metav1.DeletePropagationForeground
	if err := kube.AppsV1().StatefulSets(Namespace).Delete(ctx, Ledger, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		return fmt.Errorf("delete StatefulSet %s: %w", Ledger, err)
	}
	err = poll(ctx, 2*time.Minute, "the garbage collector to delete "+Ledger+"'s pods and be refused its finalizer removal", func(ctx context.Context) (bool, error) {
		pods, err := b.pods(ctx, Namespace, "app="+Ledger)
		if err != nil || len(pods) > 0 {
			return false, err
		}
		revs, err := kube.AppsV1().ControllerRevisions(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + Ledger})
		if err != nil || len(revs.Items) > 0 {
			return false, err
		}
		got, err := kube.AppsV1().StatefulSets(Namespace).Get(ctx, Ledger, metav1.GetOptions{})
		return err == nil && got.DeletionTimestamp != nil && len(got.Finalizers) == 1 && got.Finalizers[0] == metav1.FinalizerDeleteDependents, err
	})
	if err != nil {
		return err
	}
	shop.expect("stuck-terminating", "admission-webhook-unavailable", Object{"StatefulSet", Namespace, Ledger}, false,
		"ledger: retired with --cascade=foreground after the policy engine was uninstalled with its namespace; its webhook for StatefulSets "+
			"stayed, calls a Service that is gone and rejects the garbage collector's last update (a person restores the engine or deletes "+PolicyWebhookConfig+")")
	return nil
}

// policyWebhookConfig is the configuration as the engine registers it for a policy with
// failurePolicy Fail on StatefulSets: every namespace but its own, CREATE and UPDATE.
func policyWebhookConfig() *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail, equivalent, sideEffects := admissionregistrationv1.Fail, admissionregistrationv1.Equivalent, admissionregistrationv1.SideEffectClassNoneOnDryRun
	path, timeout := "/validate/fail", int32(10)
	scope := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: PolicyWebhookConfig, Labels: map[string]string{"webhook.kyverno.io/managed-by": "kyverno"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: PolicyWebhook,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: policyNamespace, Name: policyService, Path: &path}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
					Resources: []string{"statefulsets"}, Scope: &scope}}},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{policyNamespace}}}},
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &sideEffects,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
