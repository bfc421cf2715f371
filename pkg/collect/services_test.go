package collect

import (
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Services are listed whole once; only those being deleted are kept, and the objects input takes
// them from there.
func TestCollectDeletedServicesWholeAndOnce(t *testing.T) {
	deleting := metav1.NewTime(time.Now().Add(-time.Hour))
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", DeletionTimestamp: &deleting,
		Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	live := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}
	c := newFakeCluster(t, lb, live)
	c.serve("v1", metav1.APIResource{Name: "services", Kind: "Service", Namespaced: true})
	metaListed := recordMetaLists(c)
	s := collect(t, c, allNamespaces, snapshot.InputObjects, snapshot.InputDeletedServices)
	if len(s.DeletedServices) != 1 || s.DeletedServices[0].Name != "web" || s.DeletedServices[0].Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Fatalf("deleted services = %v, want web, whole", s.DeletedServices)
	}
	if slices.Contains(*metaListed, "services") {
		t.Errorf("services listed metadata-only again: %v", *metaListed)
	}
	if got, want := deletedObjectNames(s), []string{"Service shop/web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}
}
