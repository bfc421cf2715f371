package collect

import (
	"context"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readDeletedAttachments lists VolumeAttachments whole and keeps those being deleted: why a
// detach does not finish (status.detachError) is not in their metadata. Cluster-scoped, so a
// scan of one namespace reads none unless its scope names them; the objects input takes them
// from here.
func (col *collector) readDeletedAttachments(ctx context.Context) error {
	if !col.readsCluster(schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}) {
		return nil
	}
	vas, err := listAll(ctx, col, "storage.k8s.io/volumeattachments", col.c.Kube.StorageV1().VolumeAttachments().List,
		func(l *storagev1.VolumeAttachmentList) []storagev1.VolumeAttachment { return l.Items })
	var kept []*storagev1.VolumeAttachment
	for _, va := range vas {
		if va.DeletionTimestamp != nil {
			kept = append(kept, va)
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.DeletedAttachments = kept })
	return err
}
