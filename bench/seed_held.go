package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// heldNamespace is deleted and stays Terminating: a ConfigMap in it keeps a finalizer no
	// controller removes, the stuck namespace `why ns` is measured on.
	heldNamespace = "team-retired"
	heldFinalizer = "cleanup.example.com/archive"
)

// heldNamespace leaves a namespace Terminating as the namespace controller of
// kube-controller-manager v1.37.1 leaves one whose content keeps a finalizer: every other object
// deleted, the ConfigMap deleted but held, and the conditions of
// pkg/controller/namespace/deletion/status_condition_utils.go (updateConditions, with the messages
// of GetNamespaceConditions) written through the status subresource. The bench runs no controller,
// so the writes are the seeder's.
func (s *seeder) heldNamespace(ctx context.Context) error {
	c := s.kube.CoreV1()
	steps := []func() error{
		func() error {
			_, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: heldNamespace,
				Labels: map[string]string{"kubernetes.io/metadata.name": heldNamespace, "team": heldNamespace}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.ConfigMaps(heldNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "archive-state",
				Finalizers: []string{heldFinalizer}}, Data: map[string]string{"last": "2026-01-01"}}, metav1.CreateOptions{})
			return err
		},
		func() error { return c.Namespaces().Delete(ctx, heldNamespace, metav1.DeleteOptions{}) },
		func() error { return c.ConfigMaps(heldNamespace).Delete(ctx, "archive-state", metav1.DeleteOptions{}) },
		func() error {
			ns, err := c.Namespaces().Get(ctx, heldNamespace, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			cond := func(t corev1.NamespaceConditionType, st corev1.ConditionStatus, reason, msg string) corev1.NamespaceCondition {
				return corev1.NamespaceCondition{Type: t, Status: st, Reason: reason, Message: msg, LastTransitionTime: now}
			}
			ns.Status.Conditions = []corev1.NamespaceCondition{
				cond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered"),
				cond(corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionFalse, "ParsedGroupVersions", "All legacy kube types successfully parsed"),
				cond(corev1.NamespaceDeletionContentFailure, corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
				cond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances"),
				cond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain",
					"Some content in the namespace has finalizers remaining: "+heldFinalizer+" in 1 resource instances"),
			}
			_, err = c.Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{FieldManager: managerKCM})
			return err
		},
	}
	for _, step := range steps {
		if err := retry(ctx, step); err != nil {
			return fmt.Errorf("namespace %s: %w", heldNamespace, err)
		}
	}
	return nil
}
