package checktest

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Managed is a managedFields entry of an update: manager, subresource ("" for the main resource),
// how long ago it was written and the fieldsV1 JSON.
func Managed(manager, subresource string, age time.Duration, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: MetaAgo(age), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: subresource}
}

// MetadataFields is the fieldsV1 JSON the apiserver records for a manager that set these
// finalizers and labels.
func MetadataFields(finalizers, labels []string) string {
	meta := map[string]any{}
	if len(finalizers) > 0 {
		fins := map[string]any{".": map[string]any{}}
		for _, f := range finalizers {
			b, _ := json.Marshal(f)
			fins["v:"+string(b)] = map[string]any{}
		}
		meta["f:finalizers"] = fins
	}
	if len(labels) > 0 {
		ls := map[string]any{}
		for _, k := range labels {
			ls["f:"+k] = map[string]any{}
		}
		meta["f:labels"] = ls
	}
	raw, _ := json.Marshal(map[string]any{"f:metadata": meta})
	return string(raw)
}
