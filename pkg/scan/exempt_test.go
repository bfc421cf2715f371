package scan

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/exempt"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// A pod of a StatefulSet, as the StatefulSet controller leaves it (its controller reference names
// the StatefulSet), listed metadata-only; the StatefulSet carries the annotations, kustomize's
// origin among them, and the namespace is read.
func TestAnnotateFollowsOwnersAndNamespace(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "sts-uid",
		Annotations: map[string]string{exempt.AnnotationIgnore: "*", exempt.AnnotationReason: "migrating",
			report.OriginAnnotation: "path: shop/db.yaml\nrepo: https://example.com/shop.git\n"}}}
	pod := &metav1.ObjectMeta{Name: "db-0", Namespace: "shop", UID: "pod-uid", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "sts-uid", Controller: ptr.To(true)}}}
	orphan := &metav1.ObjectMeta{Name: "web-1", Namespace: "shop", UID: "web-uid", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1a", UID: "rs-uid", Controller: ptr.To(true)}}}
	snap := &snapshot.Snapshot{Now: now, Pods: []*metav1.ObjectMeta{pod, orphan}, StatefulSets: []*appsv1.StatefulSet{sts},
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}}}
	snap.Index()
	finding := func(m *metav1.ObjectMeta) report.Finding {
		return report.Finding{Check: "stuck-terminating", Severity: report.SeverityError, RootCause: report.RootCause{ID: "finalizer-owner-missing"},
			Object: report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: m.Namespace, Name: m.Name, UID: string(m.UID)}}
	}
	r := &report.Report{Findings: []report.Finding{finding(pod), finding(orphan)}}
	p := &exempt.Policy{Annotations: true, IDs: exempt.IDs{Checks: []string{"stuck-terminating"}}}
	annotate(r, snap, p)
	if len(r.Suppressed) != 1 || r.Suppressed[0].Object.Name != "db-0" || r.Suppressed[0].SuppressedBy.Object.String() != "shop/statefulset/db" {
		t.Fatalf("suppressed %+v", r.Suppressed)
	}
	if o := r.Suppressed[0].Origin; o == nil || o.Path != "shop/db.yaml" || o.Repo != "https://example.com/shop.git" {
		t.Errorf("origin from the owner: %+v", o)
	}
	// The ReplicaSet was not read: its annotations cannot be honoured, and the report says so.
	if len(r.Findings) != 1 || r.Findings[0].Origin != nil || len(r.Warnings) != 1 || r.Warnings[0].Reason != exempt.WarnUnread {
		t.Errorf("findings %+v, warnings %+v", r.Findings, r.Warnings)
	}
	// Without a policy nothing is held back, and the origin is still found.
	r = &report.Report{Findings: []report.Finding{finding(pod)}}
	annotate(r, snap, nil)
	if len(r.Findings) != 1 || len(r.Suppressed) != 0 || r.Findings[0].Origin == nil {
		t.Errorf("without a policy: %+v", r)
	}
}
