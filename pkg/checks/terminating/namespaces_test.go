package terminating

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestStuckTerminatingNamespaces(t *testing.T) {
	discovery := "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"
	cases := []struct {
		name  string
		world func() checktest.Cluster
		want  want
	}{
		{name: "unavailable APIService blocks discovery",
			world: func() checktest.Cluster {
				return checktest.Cluster{
					Namespaces: []*corev1.Namespace{terminatingNamespace("target", 10*time.Minute,
						checktest.NamespaceCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", discovery),
						checktest.NamespaceCondition(corev1.NamespaceContentRemaining, corev1.ConditionFalse, "ContentRemoved", "All content successfully removed"))},
					APIServices: []*unstructured.Unstructured{
						checktest.APIService("v1.apps", "apps", "v1", "", "", "True", "Local", "Local APIServices are always available"),
						checktest.APIService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "False", "ServiceNotFound",
							`service/metrics-server in "kube-system" is not present`),
					},
					Admission: snapshot.Admission{Services: map[string]*snapshot.BackendService{
						"kube-system/metrics-server": checktest.Backend("kube-system", "metrics-server", nil)}},
				}
			},
			want: want{rootCause: RootCauseNamespaceDiscoveryFailed, summary: []string{"APIService v1beta1.metrics.k8s.io"},
				evidence: []string{"condition NamespaceDeletionDiscoveryFailure=True (DiscoveryFailed)", "failing group versions named by the condition: metrics.k8s.io/v1beta1",
					"APIService v1beta1.metrics.k8s.io: calls Service kube-system/metrics-server port 443", "Service kube-system/metrics-server: not found",
					"recent failure: Available=False (ServiceNotFound)",
					"APIService v1beta1.metrics.k8s.io: unavailable, Service kube-system/metrics-server does not exist; its group/version metrics.k8s.io/v1beta1 is named by the condition",
					"1 Terminating namespace(s) in scope whose discovery fails on metrics.k8s.io/v1beta1: target",
					"spec.finalizers [kubernetes]"},
				noEvid:  []string{"APIService v1.apps", "recent failure: Discovery failed"},
				message: []string{"every namespace"},
				refs:    []string{"kubernetes/kubernetes#60807"}}},
		{name: "discovery failed, APIServices Unread: the condition still names the group",
			world: func() checktest.Cluster {
				return checktest.Cluster{
					Namespaces: []*corev1.Namespace{terminatingNamespace("target", 10*time.Minute,
						checktest.NamespaceCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", discovery))},
					Unread: map[snapshot.Input]error{snapshot.InputAPIServices: errors.New("forbidden: list apiregistration.k8s.io/apiservices")},
				}
			},
			want: want{rootCause: RootCauseNamespaceDiscoveryFailed, summary: []string{"metrics.k8s.io/v1beta1"}, evidence: []string{"APIServices were not read"}}},
		{name: "content with finalizers remains",
			world: func() checktest.Cluster {
				return checktest.Cluster{
					Namespaces: []*corev1.Namespace{terminatingNamespace("target", 10*time.Minute,
						checktest.NamespaceCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered"),
						checktest.NamespaceCondition(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 2 resource instances, widgets.example.com has 1 resource instances"),
						checktest.NamespaceCondition(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/protect in 1 resource instances"))},
					Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "target", "w1", 9*time.Minute, "widget-operator", "example.com/protect")},
				}
			},
			want: want{rootCause: RootCauseNamespaceContentRemaining, summary: []string{"pods (2), widgets.example.com (1) remains"},
				evidence: []string{"remaining: pods (2), widgets.example.com (1)", "held by finalizers: example.com/protect (1)",
					"objects being deleted in the namespace: Widget w1 [example.com/protect]"},
				noEvid: []string{"NamespaceDeletionDiscoveryFailure"}}},
		{name: "no condition yet: the namespace controller has not acted",
			world: func() checktest.Cluster {
				return checktest.Cluster{Namespaces: []*corev1.Namespace{terminatingNamespace("target", 10*time.Minute)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"no NamespaceDeletion* or *Remaining condition"}, message: []string{"kube-controller-manager"}}},
		{name: "near miss: namespace deleted 1s ago",
			world: func() checktest.Cluster {
				return checktest.Cluster{Namespaces: []*corev1.Namespace{terminatingNamespace("target", time.Second,
					checktest.NamespaceCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", discovery))}}
			}},
		{name: "near miss: namespace not being deleted",
			world: func() checktest.Cluster {
				ns := terminatingNamespace("target", time.Hour)
				ns.DeletionTimestamp = nil
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				return checktest.Cluster{Namespaces: []*corev1.Namespace{ns}}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := New().Run(c.world().Snapshot(), 5*time.Minute)
			expect(t, fs, "target", c.want)
			if f, _ := find(fs, "target"); f.RootCause.ID == RootCauseNamespaceDiscoveryFailed && len(c.world().APIServices) > 0 &&
				(len(f.BlockedBy) != 1 || f.BlockedBy[0].Kind != "APIService" || f.BlockedBy[0].Name != "v1beta1.metrics.k8s.io") {
				t.Errorf("blockedBy %+v, want the APIService", f.BlockedBy)
			}
			for _, f := range fs {
				for _, fx := range f.Fixes {
					if f.Object.Kind == "Namespace" {
						t.Errorf("namespace finding offers fix %s: no fix may finalize a namespace", fx.Action)
					}
				}
			}
		})
	}
}
