package e2e

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// operatorUninstalled: two kubebuilder operators' custom resources are deleted and held by their
// finalizers. One operator was uninstalled before them (its Deployment and pods deleted, its
// namespace kept): its leader Lease "<hash>.<group>" stays behind, last renewed three days ago
// by a pod that no longer exists. controller-runtime names the Lease after its LeaderElectionID
// and client-go's leader election records the pod's hostname as holder
// (k8s.io/client-go/tools/leaderelection/resourcelock, LeaseLock). That proves the owner gone:
// finalizer-owner-missing naming the Lease, and remove-finalizer lets the deletion finish. The
// other operator's Lease was renewed a moment ago: it runs, and no finalizer is offered.
func (e *teEnv) operatorUninstalled(t *testing.T) {
	const ns = "st-operator"
	for _, n := range []string{ns, "backup-system", "reports-system"} {
		e.namespace(t, n)
	}
	installLooseCRD(t, e.c, "backup.example.com", "Backup", "backups")
	installLooseCRD(t, e.c, "reports.example.com", "Report", "reports")
	e.leaderLease(t, "backup-system", "7d3e2a1b.backup.example.com", "backup-operator-5c9d7f6b8-x2x4k", 72*time.Hour)
	e.leaderLease(t, "reports-system", "1a2b3c4d.reports.example.com", "reports-operator-7f8d9c6b5-q9w8e", 0)

	backup := e.heldCustomResource(t, schema.GroupVersionResource{Group: "backup.example.com", Version: "v1", Resource: "backups"},
		"Backup", ns, "nightly", "backup.example.com/finalizer")
	e.heldCustomResource(t, schema.GroupVersionResource{Group: "reports.example.com", Version: "v1", Resource: "reports"},
		"Report", ns, "weekly", "reports.example.com/finalizer")

	rep := e.scan(t, ns, 2)
	f := teFind(t, rep, "Backup", "nightly")
	assertFinding(t, f, "finalizer-owner-missing", report.SeverityError,
		[]string{"uninstalled: its leader Lease backup-system/7d3e2a1b.backup.example.com (named after API group backup.example.com",
			"was last renewed 3d ago by pod backup-operator-5c9d7f6b8-x2x4k, a pod that no longer exists"},
		[]string{"remove-finalizer:backup.example.com/finalizer"})
	g := teFind(t, rep, "Report", "weekly")
	assertFinding(t, g, "finalizer-owner-not-acting", report.SeverityWarning,
		[]string{"leader Lease reports-system/1a2b3c4d.reports.example.com", "by pod reports-operator-7f8d9c6b5-q9w8e: the operator runs"}, nil)

	e.fix(t, ns, f.ID, 0, "applied")
	eventually(t, 30*time.Second, "Backup nightly to be gone", func(ctx context.Context) (bool, error) {
		_, err := e.c.Dynamic().Resource(schema.GroupVersionResource{Group: "backup.example.com", Version: "v1", Resource: "backups"}).
			Namespace(ns).Get(ctx, backup.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
}

// leaderLease writes the Lease an operator's leader election keeps: holder pod's name and a
// unique suffix, 15s duration, renewed renewedAgo.
func (e *teEnv) leaderLease(t *testing.T, ns, name, pod string, renewedAgo time.Duration) {
	t.Helper()
	holder, duration := pod+"_3f1c2d4e-9a8b-4c7d-8e6f-1a2b3c4d5e6f", int32(15)
	at := metav1.NewMicroTime(time.Now().Add(-renewedAgo))
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, AcquireTime: &at, RenewTime: &at}}
	if _, err := e.cs.CoordinationV1().Leases(ns).Create(e.ctx, l, metav1.CreateOptions{FieldManager: "manager"}); err != nil {
		t.Fatal(err)
	}
}

// heldCustomResource creates a custom resource, has its operator ("manager") add its finalizer,
// and deletes it.
func (e *teEnv) heldCustomResource(t *testing.T, gvr schema.GroupVersionResource, kind, ns, name, finalizer string) *unstructured.Unstructured {
	t.Helper()
	dyn := e.c.Dynamic().Resource(gvr).Namespace(ns)
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"schedule": "@daily"}}}
	if _, err := dyn.Create(e.ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Patch(e.ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+finalizer+`"]}}`),
		metav1.PatchOptions{FieldManager: "manager"}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return obj
}
