package admission

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Request is one write as admission sees it.
type Request struct {
	// Resource is the group, version and resource the request is made in; Subresource is
	// e.g. "status" or "finalize" ("" for the object itself).
	Resource    schema.GroupVersionResource
	Subresource string
	// Operation is CREATE, UPDATE (a PATCH is admitted as one), DELETE or CONNECT.
	Operation admissionregistrationv1.OperationType
	// Namespace is the object's namespace, "" for a cluster-scoped object; Name is its name. A
	// Namespace object is matched as the apiserver does, by its own name and labels.
	Namespace, Name string
	// NamespaceLabels are the labels of the object's namespace (of a Namespace object, its own
	// labels as stored). nil means they are not known: every namespace carries
	// kubernetes.io/metadata.name, so labels read from the cluster are never empty.
	NamespaceLabels map[string]string
	// OldLabels and NewLabels are the labels of the object before and after the write. Which
	// objects a request carries follows from its operation: CREATE the new one, UPDATE both,
	// DELETE the old one, CONNECT neither (its options object has no metadata).
	OldLabels, NewLabels map[string]string
	// Equivalents are the other group/versions/resources the apiserver serves the same objects
	// as (a CRD's other served versions; core and events.k8s.io events), for webhooks with
	// matchPolicy Equivalent. nil means they are not known, and a webhook whose rules would
	// match through one is Undecided; an empty list means there are none.
	Equivalents []schema.GroupVersionResource
}

// Create is the creation of obj in resource.
func Create(resource schema.GroupVersionResource, obj metav1.Object, namespaceLabels map[string]string) Request {
	return request(resource, admissionregistrationv1.Create, obj, namespaceLabels)
}

// Update is an update or patch of obj in resource that leaves its labels as they are: the write
// that removes a finalizer or changes an annotation.
func Update(resource schema.GroupVersionResource, obj metav1.Object, namespaceLabels map[string]string) Request {
	return request(resource, admissionregistrationv1.Update, obj, namespaceLabels)
}

// Delete is the deletion of obj in resource.
func Delete(resource schema.GroupVersionResource, obj metav1.Object, namespaceLabels map[string]string) Request {
	return request(resource, admissionregistrationv1.Delete, obj, namespaceLabels)
}

func request(resource schema.GroupVersionResource, op admissionregistrationv1.OperationType, obj metav1.Object, namespaceLabels map[string]string) Request {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{} // the object is there, without labels
	}
	return Request{Resource: resource, Operation: op, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		NamespaceLabels: namespaceLabels, OldLabels: labels, NewLabels: labels}
}

// String names the request the way evidence does: `UPDATE apps/v1 deployments shop/web`.
func (r Request) String() string {
	res := r.Resource.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	obj := r.Name
	if r.Namespace != "" {
		obj = r.Namespace + "/" + r.Name
	}
	return fmt.Sprintf("%s %s %s %s", r.Operation, r.Resource.GroupVersion(), res, obj)
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespace is the namespace the apiserver puts on the request: a Namespace object's own name.
func (r Request) namespace() string {
	if r.Resource == namespaces {
		return r.Name
	}
	return r.Namespace
}

// oldObject and newObject say whether the request carries that object, and its labels.
func (r Request) oldObject() (map[string]string, bool) {
	return r.OldLabels, r.Operation == admissionregistrationv1.Update || r.Operation == admissionregistrationv1.Delete
}

func (r Request) newObject() (map[string]string, bool) {
	return r.NewLabels, r.Operation == admissionregistrationv1.Create || r.Operation == admissionregistrationv1.Update
}
