package collect

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// PVs are read whole once, by their own input; the objects input takes the deleted ones from it
// rather than listing them again metadata-only.
func TestCollectPersistentVolumesWholeAndOnce(t *testing.T) {
	deleting := metav1.NewTime(time.Now().Add(-time.Hour))
	bound := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-data", DeletionTimestamp: &deleting,
		Finalizers: []string{"kubernetes.io/pv-protection"}},
		Spec:   corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: "shop", Name: "data"}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	free := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-free"}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}}
	c := newFakeCluster(t, bound, free)
	c.serve("v1", metav1.APIResource{Name: "persistentvolumes", Kind: "PersistentVolume"})
	metaListed := recordMetaLists(c)
	s := collect(t, c, allNamespaces, snapshot.InputObjects, snapshot.InputPersistentVolumes)
	if len(s.PersistentVolumes) != 2 || s.PersistentVolumes[0].Spec.ClaimRef == nil && s.PersistentVolumes[1].Spec.ClaimRef == nil {
		t.Fatalf("persistent volumes = %v, want both, whole", s.PersistentVolumes)
	}
	if slices.Contains(*metaListed, "persistentvolumes") {
		t.Errorf("persistentvolumes listed metadata-only again: %v", *metaListed)
	}
	if got, want := deletedObjectNames(s), []string{"PersistentVolume /pv-data"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}

	ns := collect(t, c, Options{Scope: snapshot.Scope{Namespace: "shop"}}, snapshot.InputObjects, snapshot.InputPersistentVolumes)
	if len(ns.PersistentVolumes) != 0 {
		t.Errorf("a scan of one namespace read %d PVs, want none", len(ns.PersistentVolumes))
	}
}

// recordMetaLists answers every metadata-only LIST empty and records which resources were listed.
func recordMetaLists(c *fakeCluster) *[]string {
	var listed []string
	c.meta.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		listed = append(listed, a.GetResource().Resource)
		return true, &metav1.List{}, nil
	})
	return &listed
}

// deletedObjectNames names the objects input's objects "Kind namespace/name".
func deletedObjectNames(s *snapshot.Snapshot) []string {
	var out []string
	for _, o := range s.Objects {
		out = append(out, o.Kind+" "+o.Meta.Namespace+"/"+o.Meta.Name)
	}
	return out
}
