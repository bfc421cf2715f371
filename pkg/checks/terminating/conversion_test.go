package terminating

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Conditions as kube-controller-manager v1.37.1 writes them (makeDeleteContentCondition in
// pkg/controller/namespace/deletion/status_condition_utils.go, quoting the apiserver's error for
// the LIST of the preferred version; the storage wording observed on the real v1.37.1 apiserver).
const (
	convNotFound = `Failed to delete all resource types, 1 remaining: failed to read one or more gadgets.example.com from the storage: ` +
		`StorageError: corrupt object, Code: 7, Key: /registry/example.com/gadgets/target/g1, ResourceVersion: 0, AdditionalErrorMsg: ` +
		`object not decodable revision=236: conversion webhook for example.com/v1beta1, Kind=Gadget failed: ` +
		`Post "https://gadget-converter.gadget-system.svc:443/convert?timeout=30s": service "gadget-converter" not found`
	convX509 = `Failed to delete all resource types, 1 remaining: Internal error occurred: StorageError: corrupt object, Code: 7, ` +
		`Key: /example.com/gadgets/target/g1, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=257: ` +
		`conversion webhook for example.com/v1beta1, Kind=Gadget failed: Post "https://gadget-converter.gadget-system.svc:443/convert?timeout=30s": ` +
		`tls: failed to verify certificate: x509: certificate signed by unknown authority`
	remaining = "Some resources are remaining: gadgets.example.com has 1 resource instances"
	finRemain = "Some content in the namespace has finalizers remaining: example.com/cleanup in 1 resource instances"
)

// A namespace whose content the namespace controller cannot read because the CRD's conversion
// webhook fails is held by that webhook: the finding names the CRD, its Service and the
// resource type, blockedBy names the CRD, and no fix touches the namespace. Around it: the same
// webhook up, a CRD converting without a webhook since, a failure that is not a conversion, and
// a namespace still deleting content normally.
func TestNamespaceConversionWebhook(t *testing.T) {
	crd := checktest.ConversionCRD("example.com", "Gadget", "gadgets", "gadget-system", "gadget-converter")
	svc := checktest.WebhookServiceObject("gadget-system", "gadget-converter")
	gone := map[string]*snapshot.BackendService{"gadget-system/gadget-converter": checktest.Backend("gadget-system", "gadget-converter", nil)}
	up := map[string]*snapshot.BackendService{"gadget-system/gadget-converter": checktest.Backend("gadget-system", "gadget-converter", svc,
		checktest.EndpointSlice(svc, "https", 1, 0, 0))}
	failed := func(msg string) checktest.Option {
		return checktest.NamespaceCondition(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, "ContentDeletionFailed", msg)
	}
	stillDeleting := []checktest.Option{
		checktest.NamespaceCondition(corev1.NamespaceDeletionContentFailure, corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
		checktest.NamespaceCondition(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", remaining),
		checktest.NamespaceCondition(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", finRemain),
	}
	world := func(crds []*unstructured.Unstructured, services map[string]*snapshot.BackendService, conds ...checktest.Option) checktest.Cluster {
		return checktest.Cluster{
			Namespaces: []*corev1.Namespace{terminatingNamespace("target", 10*time.Minute, conds...),
				terminatingNamespace("other", 20*time.Minute, failed(convNotFound))},
			Admission: snapshot.Admission{ConversionCRDs: crds, Services: services},
		}
	}
	none := checktest.ConversionCRD("example.com", "Gadget", "gadgets", "", "")
	for _, tc := range []struct {
		name string
		c    checktest.Cluster
		want want
	}{
		{"Service missing", world([]*unstructured.Unstructured{crd}, gone, failed(convNotFound)), want{rootCause: RootCauseConversionWebhookUnavailable,
			summary: []string{"the conversion webhook of CustomResourceDefinition gadgets.example.com fails (Service gadget-system/gadget-converter does not exist)"},
			evidence: []string{"condition NamespaceDeletionContentFailure=True (ContentDeletionFailed)",
				"resource types the namespace controller cannot read or delete: gadgets.example.com (Kind Gadget, stored at example.com/v1beta1)",
				"CustomResourceDefinition gadgets.example.com: conversion webhook, calls Service gadget-system/gadget-converter port 443",
				"Service gadget-system/gadget-converter: not found",
				`recent failure: conversion webhook for example.com/v1beta1, Kind=Gadget failed: Post "https://gadget-converter.gadget-system.svc:443/convert?timeout=30s": service "gadget-converter" not found`,
				"2 Terminating namespace(s) in scope held behind this conversion webhook: other, target", "spec.finalizers [kubernetes]"},
			message: []string{"Emptying the namespace's spec.finalizers would leave them behind in etcd", "Restore the conversion webhook"}}},
		{"Service up, certificate refused", world([]*unstructured.Unstructured{crd}, up, failed(convX509)), want{rootCause: RootCauseConversionWebhookUnavailable,
			summary:  []string{"calls fail on its certificate: x509: certificate signed by unknown authority"},
			evidence: []string{"Service gadget-system/gadget-converter port 443 (https): 1/1 endpoints ready", "x509: certificate signed by unknown authority"}}},
		{"CRD not read", world(nil, nil, failed(convNotFound)), want{rootCause: RootCauseConversionWebhookUnavailable,
			summary:  []string{"the conversion webhook of the CustomResourceDefinition of example.com, Kind=Gadget fails (calls fail: its Service gadget-converter was not found)"},
			evidence: []string{"the CustomResourceDefinition of example.com, Kind=Gadget was not read", "Kind Gadget of example.com (stored at example.com/v1beta1)"}}},
		// The webhook was removed from the CRD since the condition was written: the next pass converts.
		{"conversion without a webhook now", world([]*unstructured.Unstructured{none}, nil, append(stillDeleting[1:], failed(convNotFound))...),
			want{rootCause: RootCauseNamespaceContentRemaining}},
		{"a failure that is not a conversion", world([]*unstructured.Unstructured{crd}, gone,
			failed("Failed to delete all resource types, 1 remaining: unexpected items still remain in namespace: target for gvr: /v1, Resource=configmaps")),
			want{rootCause: RootCauseNamespaceContentRemaining}},
		// A neighbour: the webhook answers, the controller deleted what it could, and a
		// finalizer holds the rest.
		{"still deleting content, webhook up", world([]*unstructured.Unstructured{crd}, up, stillDeleting...), want{rootCause: RootCauseNamespaceContentRemaining,
			evidence: []string{"remaining: gadgets.example.com (1)", "held by finalizers: example.com/cleanup (1)"}, noEvid: []string{"conversion webhook"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := New().Run(tc.c.Snapshot(), 5*time.Minute)
			expect(t, fs, "target", tc.want)
			f, _ := find(fs, "target")
			if len(f.Fixes) != 0 {
				t.Errorf("namespace finding offers fixes %+v", f.Fixes)
			}
			if tc.want.rootCause != RootCauseConversionWebhookUnavailable {
				return
			}
			wantBlocked := 1
			if tc.c.Admission.ConversionCRDs == nil {
				wantBlocked = 0 // not read: its name is not known
			}
			if len(f.BlockedBy) != wantBlocked || (wantBlocked == 1 && (f.BlockedBy[0].Kind != "CustomResourceDefinition" ||
				f.BlockedBy[0].Name != "gadgets.example.com" || f.BlockedBy[0].APIVersion != "apiextensions.k8s.io/v1")) {
				t.Errorf("blockedBy %+v, want the CRD", f.BlockedBy)
			}
		})
	}
}
