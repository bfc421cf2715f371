package protolist

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Field numbers of ObjectMeta (k8s.io/apimachinery generated.proto).
const (
	fieldObjectName         = 1
	fieldObjectUID          = 5
	fieldObjectAnnotation   = 12
	fieldObjectManagedField = 17
	fieldMapEntryKey        = 1
)

func TestField(t *testing.T) {
	raw, err := (&metav1.ObjectMeta{Name: "web-1", UID: "uid-1", Generation: 3}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for num, want := range map[uint64]string{fieldObjectName: "web-1", fieldObjectUID: "uid-1", fieldObjectAnnotation: ""} {
		got, err := Field(raw, num)
		if err != nil || string(got) != want {
			t.Errorf("Field(%d) = %q, %v; want %q", num, got, err, want)
		}
	}
	if _, err := Field(raw[:len(raw)-1], fieldObjectAnnotation); err == nil {
		t.Error("Field of a truncated message: no error")
	}
}

func TestDropFields(t *testing.T) {
	m := metav1.ObjectMeta{Name: "a", Generation: 2, Labels: map[string]string{"k": "v"}, Annotations: map[string]string{"drop": "1", "keep": "2"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m1"}, {Manager: "m2"}}}
	raw, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got metav1.ObjectMeta
	err = got.Unmarshal(DropFields(raw, func(num uint64, content []byte) bool {
		if num == fieldObjectAnnotation {
			key, _ := Field(content, fieldMapEntryKey)
			return string(key) == "drop"
		}
		return num == fieldObjectManagedField
	}))
	if err != nil {
		t.Fatal(err)
	}
	m.ManagedFields = nil
	delete(m.Annotations, "drop")
	if !reflect.DeepEqual(got, m) {
		t.Errorf("got %+v, want %+v", got, m)
	}
}

func TestDropFieldsKeepsAMalformedTail(t *testing.T) {
	raw, err := (&metav1.ObjectMeta{Name: "a", UID: "u"}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	cut := raw[:len(raw)-1] // the last field is now malformed
	got := DropFields(append([]byte(nil), cut...), func(num uint64, _ []byte) bool { return num == fieldObjectName })
	if want := cut[len("\x0a\x01a"):]; string(got) != string(want) {
		t.Errorf("DropFields = %q, want the malformed tail %q kept", got, want)
	}
}
