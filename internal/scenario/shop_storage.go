package scenario

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// archiveClaim is the claim the order archiver writes to.
const archiveClaim = "order-archive"

// storage: someone cleans up the order archive's claim while the archiver still runs. The PVC
// protection controller keeps it Terminating until no pod uses it: nothing to fix but the
// archiver, which is healthy.
func (b *builder) storage(ctx context.Context, shop *Shop) error {
	pv, pvc := BoundClaim(Namespace, archiveClaim, "shop-"+archiveClaim, "10Gi")
	if _, err := b.env.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PV: %w", err)
	}
	claims := b.env.Kube.CoreV1().PersistentVolumeClaims(Namespace)
	if _, err := claims.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create PVC: %w", err)
	}
	spec := podSpec("main", "registry.shop.example/archiver:1.3.0", nil)
	spec.Volumes = []corev1.Volume{{Name: "archive", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: archiveClaim}}}}
	if err := b.deployment(ctx, Namespace, "archiver", 1, spec); err != nil {
		return err
	}
	if err := b.waitDeploymentAvailable(ctx, Namespace, "archiver"); err != nil {
		return err
	}
	if err := claims.Delete(ctx, archiveClaim, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete PVC: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := claims.Get(ctx, archiveClaim, metav1.GetOptions{})
		return err == nil && c.DeletionTimestamp != nil, err
	})
	if err != nil {
		return fmt.Errorf("claim %s held by kubernetes.io/pvc-protection: %w", archiveClaim, err)
	}
	shop.expect("stuck-terminating", "protected-resource-in-use", Object{"PersistentVolumeClaim", Namespace, archiveClaim}, false,
		"the order archive's claim was deleted while the archiver still writes to it: protected, not stuck; stop the archiver first")
	shop.Healthy = append(shop.Healthy, Object{"Deployment", Namespace, "archiver"})
	return nil
}

// BoundClaim returns a claim and the hostPath volume pre-bound to it (volumeName on the claim,
// claimRef on the volume, no storage class), so the PV controller binds them at once without a
// provisioner: the shape a statically provisioned volume has.
func BoundClaim(namespace, claim, volume, size string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	qty := resource.MustParse(size)
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: volume}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: qty},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + volume}},
		ClaimRef:               &corev1.ObjectReference{Namespace: namespace, Name: claim},
	}}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: claim}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &empty, VolumeName: volume,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: qty}},
	}}
	return pv, pvc
}
