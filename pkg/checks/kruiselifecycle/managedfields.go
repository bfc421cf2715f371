package kruiselifecycle

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fieldsOf decodes a managedFields entry's fieldsV1.
func fieldsOf(e metav1.ManagedFieldsEntry) map[string]any {
	if e.FieldsV1 == nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(e.FieldsV1.Raw, &m) != nil {
		return nil
	}
	return m
}

// hasField reports whether the fields set holds the path (each element a fieldsV1 key such as
// "f:metadata", "f:labels", `v:"example.com/hook"`).
func hasField(fields map[string]any, path ...string) bool {
	cur := fields
	for _, p := range path {
		next, ok := cur[p]
		if !ok {
			return false
		}
		m, ok := next.(map[string]any)
		if !ok {
			return false
		}
		cur = m
	}
	return true
}

// toucher is a field manager that set a field, and when it last wrote the object.
type toucher struct {
	Manager string
	Time    time.Time
}

func (f toucher) String() string {
	if f.Time.IsZero() {
		return f.Manager
	}
	return f.Manager + " at " + f.Time.UTC().Format(time.RFC3339)
}

// touchers returns the field managers whose fields include the path, newest first.
func touchers(m metav1.Object, path ...string) []toucher {
	var out []toucher
	for _, e := range m.GetManagedFields() {
		if hasField(fieldsOf(e), path...) {
			t := toucher{Manager: e.Manager}
			if e.Time != nil {
				t.Time = e.Time.Time
			}
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out
}

func joinTouchers(ts []toucher) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, t.String())
	}
	return strings.Join(parts, ", ")
}

// lastWrite returns the newest managedFields time of the entries matching keep, and the manager.
func lastWrite(m metav1.Object, keep func(metav1.ManagedFieldsEntry) bool) (time.Time, string) {
	var t time.Time
	var who string
	for _, e := range m.GetManagedFields() {
		if e.Time == nil || !keep(e) {
			continue
		}
		if e.Time.After(t) {
			t, who = e.Time.Time, e.Manager
		}
	}
	return t, who
}

// specWrite is the last write that set fields under spec (not through a subresource).
func specWrite(m metav1.Object) (time.Time, string) {
	return lastWrite(m, func(e metav1.ManagedFieldsEntry) bool {
		return e.Subresource == "" && hasField(fieldsOf(e), "f:spec")
	})
}

// statusWrite is the last write through the status subresource.
func statusWrite(m metav1.Object) (time.Time, string) {
	return lastWrite(m, func(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "status" })
}

// metaWrite is the last write of an object's main resource (labels, finalizers, spec).
func metaWrite(m metav1.Object) time.Time {
	t, _ := lastWrite(m, func(e metav1.ManagedFieldsEntry) bool { return e.Subresource == "" })
	return t
}
