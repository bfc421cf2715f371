package checktest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// LoadBalancerService is a Service of type LoadBalancer with the cleanup finalizer the service
// controller adds once it provisions (or starts to provision) a load balancer.
func LoadBalancerService(namespace, name string, opts ...Option) *corev1.Service {
	s := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-Service-" + name), ResourceVersion: "900",
			Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
	}
	apply(s, opts)
	return s
}

// ServiceObject is the metadata a metadata-only list returns for a Service.
func ServiceObject(s *corev1.Service) snapshot.Object {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: *s.ObjectMeta.DeepCopy()}
	return snapshot.Object{Resource: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service", Namespaced: true, Meta: m}
}
