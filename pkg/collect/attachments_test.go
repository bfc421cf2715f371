package collect

import (
	"reflect"
	"slices"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// VolumeAttachments are listed whole once, those being deleted kept; a scan of one namespace
// reads none (they are cluster-scoped).
func TestCollectDeletedAttachments(t *testing.T) {
	deleting := metav1.NewTime(time.Now().Add(-time.Hour))
	pv := "pv-data"
	stuck := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1", DeletionTimestamp: &deleting,
		Finalizers: []string{"external-attacher/ebs-csi-aws-com"}},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: "node-a", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}}
	live := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-2"}}
	c := newFakeCluster(t, stuck, live)
	c.serve("storage.k8s.io/v1", metav1.APIResource{Name: "volumeattachments", Kind: "VolumeAttachment"})
	metaListed := recordMetaLists(c)
	s := collect(t, c, allNamespaces, snapshot.InputObjects, snapshot.InputDeletedAttachments)
	if len(s.DeletedAttachments) != 1 || s.DeletedAttachments[0].Spec.Attacher != "ebs.csi.aws.com" {
		t.Fatalf("deleted attachments = %v, want csi-1, whole", s.DeletedAttachments)
	}
	if slices.Contains(*metaListed, "volumeattachments") {
		t.Errorf("volumeattachments listed metadata-only again: %v", *metaListed)
	}
	if got, want := deletedObjectNames(s), []string{"VolumeAttachment /csi-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}
	if ns := collect(t, c, Options{Scope: snapshot.Scope{Namespace: "shop"}}, snapshot.InputDeletedAttachments); len(ns.DeletedAttachments) != 0 {
		t.Errorf("a scan of one namespace read %d attachments", len(ns.DeletedAttachments))
	}
}
