package collect

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const gadgetFailed = `Failed to delete all resource types, 1 remaining: conversion webhook for example.com/v1beta1, Kind=Gadget failed: ` +
	`Post "https://converter.gadgets.svc:443/convert?timeout=30s": service "converter" not found`

// Only a namespace being deleted whose content failure quotes a conversion names a CRD to read.
func TestConversionKinds(t *testing.T) {
	failed := checktest.NamespaceCondition(corev1.NamespaceDeletionContentFailure, corev1.ConditionTrue, "ContentDeletionFailed", gadgetFailed)
	resolved := checktest.NamespaceCondition(corev1.NamespaceDeletionContentFailure, corev1.ConditionFalse, "ContentDeleted", "All content successfully deleted, may be waiting on finalization")
	got := conversionKinds([]*corev1.Namespace{
		checktest.Namespace("a", checktest.DeletedSince(time.Hour), failed),
		checktest.Namespace("b", checktest.DeletedSince(time.Hour), failed),
		checktest.Namespace("c", checktest.DeletedSince(time.Hour), resolved),
		checktest.Namespace("d", failed), // not being deleted: a leftover condition is not read
	})
	if fmt.Sprint(got) != "[Gadget.example.com]" {
		t.Errorf("kinds = %v, want Gadget.example.com once", got)
	}
}

// The Services read are those of every webhook, of the CRDs read for a conversion failure, and
// of the APIServices not Available or named by a discovery failure: never those of healthy
// APIServices nobody names, nor local ones.
func TestBackendServices(t *testing.T) {
	discovery := "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: custom.metrics.k8s.io/v1beta1: stale GroupVersion discovery"
	s := &snapshot.Snapshot{
		Admission: snapshot.Admission{
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{checktest.ValidatingWebhooks("v",
				checktest.Webhook("v.example.com", "policy", "engine", checktest.Rules("*", "*", "*", "*")),
				checktest.Webhook("u.example.com", "", "", checktest.Rules("*", "*", "*", "*"), checktest.WebhookURL("https://x.example.net")))},
			ConversionCRDs: []*unstructured.Unstructured{checktest.ConversionCRD("example.com", "Gadget", "gadgets", "gadgets", "converter"),
				checktest.ConversionCRD("example.com", "Widget", "widgets", "", "")},
		},
		Namespaces: []*corev1.Namespace{checktest.Namespace("ns", checktest.DeletedSince(time.Hour),
			checktest.NamespaceCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", discovery))},
		APIServices: []*unstructured.Unstructured{
			checktest.APIService("v1.apps", "apps", "v1", "", "", "True", "Local", ""),
			checktest.APIService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "True", "Passed", ""),
			checktest.APIService("v1beta1.custom.metrics.k8s.io", "custom.metrics.k8s.io", "v1beta1", "monitoring", "adapter", "True", "Passed", ""),
			checktest.APIService("v1.backup.example.io", "backup.example.io", "v1", "backup", "api", "False", "MissingEndpoints", ""),
		},
	}
	if got := fmt.Sprint(backendServices(s)); got != "[{backup api} {gadgets converter} {monitoring adapter} {policy engine}]" {
		t.Errorf("services = %s", got)
	}
}

// Aggregated discovery hands the resource lists over in no order; they are read group by group,
// the preferred version first, so a resource served in several versions is always read at the
// preferred one (for a CRD, not necessarily the version it is stored at).
func TestInPreferenceOrder(t *testing.T) {
	gv := func(s string) metav1.GroupVersionForDiscovery {
		return metav1.GroupVersionForDiscovery{GroupVersion: s}
	}
	groups := []*metav1.APIGroup{
		{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{gv("apps/v1")}, PreferredVersion: gv("apps/v1")},
		{Name: "example.com", Versions: []metav1.GroupVersionForDiscovery{gv("example.com/v1beta1"), gv("example.com/v1")}, PreferredVersion: gv("example.com/v1")},
	}
	for range 20 { // map order differs from run to run
		lists := []*metav1.APIResourceList{{GroupVersion: "example.com/v1beta1"}, {GroupVersion: "unknown.io/v1"}, {GroupVersion: "example.com/v1"}, {GroupVersion: "apps/v1"}}
		rand.Shuffle(len(lists), func(i, j int) { lists[i], lists[j] = lists[j], lists[i] })
		inPreferenceOrder(groups, lists)
		var got []string
		for _, l := range lists {
			got = append(got, l.GroupVersion)
		}
		if fmt.Sprint(got) != "[apps/v1 example.com/v1 example.com/v1beta1 unknown.io/v1]" {
			t.Fatalf("order = %v", got)
		}
	}
}
