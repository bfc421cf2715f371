package terminating

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// finalizerManagers returns the managedFields entries that own the finalizer: their fieldsV1 has
// f:metadata.f:finalizers with the key v:"<name>".
func finalizerManagers(m metav1.Object, fin string) []metav1.ManagedFieldsEntry {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fin); err != nil {
		return nil
	}
	key := "v:" + strings.TrimSpace(buf.String())
	var out []metav1.ManagedFieldsEntry
	for _, e := range m.GetManagedFields() {
		if e.FieldsV1 == nil || e.Manager == "" {
			continue
		}
		var root struct {
			Metadata struct {
				Finalizers map[string]json.RawMessage `json:"f:finalizers"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &root); err != nil {
			continue
		}
		if _, ok := root.Metadata.Finalizers[key]; ok {
			out = append(out, e)
		}
	}
	return out
}

// managerNames returns the distinct manager names of managedFields entries, sorted.
func managerNames(entries []metav1.ManagedFieldsEntry) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		if !seen[e.Manager] {
			seen[e.Manager] = true
			out = append(out, e.Manager)
		}
	}
	sort.Strings(out)
	return out
}

// FinalizerManagers is finalizerManagers for other packages: `why` says who added each finalizer.
func FinalizerManagers(m metav1.Object, fin string) []metav1.ManagedFieldsEntry {
	return finalizerManagers(m, fin)
}
