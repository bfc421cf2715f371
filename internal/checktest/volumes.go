package checktest

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Resources the built-in finalizers' controllers hold.
var (
	PVCs        = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	PVs         = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	ReplicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	Deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	CRDs        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	Jobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// PersistentVolume is a volume as the PV controller leaves it bound to namespace/claim (phase
// Bound, claimRef with the claim's UID "uid-PersistentVolumeClaim-<claim>"), or Released when
// phase says so, with the kubernetes.io/pv-protection finalizer the apiserver's admission adds.
func PersistentVolume(name, namespace, claim string, phase corev1.PersistentVolumePhase, opts ...Option) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-PersistentVolume-" + name), ResourceVersion: "900",
			Finalizers: []string{"kubernetes.io/pv-protection"}},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: namespace, Name: claim, UID: types.UID("uid-PersistentVolumeClaim-" + claim)}},
		Status: corev1.PersistentVolumeStatus{Phase: phase},
	}
	apply(pv, opts)
	return pv
}

// PVObject is the metadata a metadata-only list returns for a PV.
func PVObject(pv *corev1.PersistentVolume) snapshot.Object {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"}, ObjectMeta: *pv.ObjectMeta.DeepCopy()}
	return snapshot.Object{Resource: PVs, Kind: "PersistentVolume", Meta: m}
}

// DependentOf adds an ownerReference to owner as the garbage collector reads it; blocking sets
// blockOwnerDeletion, as controllers set it on what they create.
func DependentOf(apiVersion, kind, name string, uid types.UID, blocking bool) Option {
	return func(m metav1.Object) {
		yes := true
		m.SetOwnerReferences(append(m.GetOwnerReferences(), metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name,
			UID: uid, Controller: &yes, BlockOwnerDeletion: &blocking}))
	}
}

// EphemeralVolume adds a generic ephemeral volume; its claim is named <pod>-<volume>.
func EphemeralVolume(name string) Option {
	return Volumes(corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})
}

// Phase sets the pod's phase.
func Phase(phase corev1.PodPhase) Option {
	return func(m metav1.Object) { pod(m).Status.Phase = phase }
}

// VolumeAttachment is a CSI driver's attachment of PV pv to node, as its external-attacher
// leaves it: finalizer external-attacher/<driver> (dots kept), attached.
func VolumeAttachment(name, driver, pv, node string, opts ...Option) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{
		TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttachment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-VolumeAttachment-" + name), ResourceVersion: "900",
			Finalizers: []string{"external-attacher/" + driver}},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true},
	}
	apply(va, opts)
	return va
}

// AttachmentObject is the metadata a metadata-only list returns for a VolumeAttachment.
func AttachmentObject(va *storagev1.VolumeAttachment) snapshot.Object {
	m := &metav1.PartialObjectMetadata{TypeMeta: va.TypeMeta, ObjectMeta: *va.ObjectMeta.DeepCopy()}
	return snapshot.Object{Resource: schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
		Kind: "VolumeAttachment", Meta: m}
}
