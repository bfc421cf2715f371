package collect

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInternerSharesWithoutChangingValues(t *testing.T) {
	in := newInterner()
	ctrl := true
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8", UID: "rs-1", Controller: &ctrl}
	mk := func(name string, labels map[string]string) *metav1.ObjectMeta {
		// Fresh copies, as a decoder returns them.
		l := map[string]string{}
		for k, v := range labels {
			l[k] = v
		}
		return &metav1.ObjectMeta{Name: name, Namespace: string([]byte("shop")), Labels: l,
			Annotations: map[string]string{"cni/ip": name + "-ip"}, OwnerReferences: []metav1.OwnerReference{owner}}
	}
	a := mk("web-1", map[string]string{"app": "web", "pod-template-hash": "5d8"})
	b := mk("web-2", map[string]string{"app": "web", "pod-template-hash": "5d8"})
	c := mk("web-3", map[string]string{"app": "web", "pod-template-hash": "6f9"})
	want := []*metav1.ObjectMeta{a.DeepCopy(), b.DeepCopy(), c.DeepCopy()}
	for _, m := range []*metav1.ObjectMeta{a, b, c} {
		in.meta(m)
	}
	for i, m := range []*metav1.ObjectMeta{a, b, c} {
		if !reflect.DeepEqual(m, want[i]) {
			t.Errorf("interned metadata changed:\n got %+v\nwant %+v", m, want[i])
		}
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("equal label sets are not shared")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(c.Labels).UnsafePointer() {
		t.Error("different label sets share a map")
	}
	if &a.OwnerReferences[0] != &c.OwnerReferences[0] {
		t.Error("equal owner references are not shared")
	}
	other := mk("web-4", nil)
	other.OwnerReferences[0].Controller = nil
	in.meta(other)
	if other.OwnerReferences[0].Controller != nil || &other.OwnerReferences[0] == &a.OwnerReferences[0] {
		t.Error("owner references that differ in controller are shared")
	}
}

func TestInternerSharesManagedFieldSets(t *testing.T) {
	in := newInterner()
	entry := func(manager, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	a := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("kubelet", `{"f:status":{}}`), entry("kcm", `{"f:spec":{}}`)}}
	b := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{entry("kubelet", `{"f:status":{}}`), entry("kcm", `{"f:spec":{"f:x":{}}}`)}}
	want := b.DeepCopy()
	in.managedFields(a)
	in.managedFields(b)
	if !reflect.DeepEqual(b, want) {
		t.Errorf("interned managedFields changed:\n got %+v\nwant %+v", b, want)
	}
	if &a.ManagedFields[0].FieldsV1.Raw[0] != &b.ManagedFields[0].FieldsV1.Raw[0] {
		t.Error("equal field sets are not shared")
	}
	if &a.ManagedFields[1].FieldsV1.Raw[0] == &b.ManagedFields[1].FieldsV1.Raw[0] {
		t.Error("different field sets share bytes")
	}
}
