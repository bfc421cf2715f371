package collect

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readVolumes reads every PersistentVolume whole: the PV protection controller's condition (the
// volume's phase and the claim it is bound to) is in its spec and status, not its metadata. A
// cluster has a few PVs per stateful pod at most, so the whole objects stay small. A scan of one
// namespace reports no PV (they are cluster-scoped) and reads none, unless its scope names them.
func (col *collector) readVolumes(ctx context.Context) error {
	if !col.readsCluster(schema.GroupResource{Resource: "persistentvolumes"}) {
		return nil
	}
	pvs, err := listAll(ctx, col, "persistentvolumes", col.c.Kube.CoreV1().PersistentVolumes().List,
		func(l *corev1.PersistentVolumeList) []corev1.PersistentVolume { return l.Items })
	col.add(func(s *snapshot.Snapshot) { s.PersistentVolumes = pvs })
	return err
}
