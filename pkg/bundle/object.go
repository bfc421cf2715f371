package bundle

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Object finds an object in the answers a bundle recorded: a full object (with its status)
// when the capture read one, else its metadata from a metadata-only list. `why --from-bundle`
// reads the object this way because a replay can only answer requests the capture made.
// resource (the plural, "deployments") tells which metadata-only lists may hold it.
func (b *Bundle) Object(apiVersion, kind, resource, namespace, name string) (*unstructured.Unstructured, bool) {
	var meta *unstructured.Unstructured
	for key, answers := range b.Index {
		path, _, _ := strings.Cut(strings.TrimPrefix(key, "GET "), "?")
		path, _, _ = strings.Cut(path, " ")
		ofResource := strings.HasSuffix(path, "/"+resource) || strings.Contains(path, "/"+resource+"/")
		for _, a := range answers {
			if a.Status != 200 || !strings.HasPrefix(a.ContentType, "application/json") {
				continue
			}
			raw, err := b.bodyBytes(a.File)
			if err != nil {
				continue
			}
			var doc struct {
				APIVersion string           `json:"apiVersion"`
				Kind       string           `json:"kind"`
				Metadata   map[string]any   `json:"metadata"`
				Items      []map[string]any `json:"items"`
			}
			if json.Unmarshal(raw, &doc) != nil {
				continue
			}
			items := doc.Items
			listAV, listKind := doc.APIVersion, strings.TrimSuffix(doc.Kind, "List")
			if !strings.HasSuffix(doc.Kind, "List") {
				var obj map[string]any
				if json.Unmarshal(raw, &obj) != nil {
					continue
				}
				items = []map[string]any{obj}
			}
			for _, it := range items {
				u := &unstructured.Unstructured{Object: it}
				if u.GetAPIVersion() == "" {
					u.SetAPIVersion(listAV)
					u.SetKind(listKind)
				}
				if u.GetNamespace() != namespace || u.GetName() != name {
					continue
				}
				switch {
				case u.GetAPIVersion() == apiVersion && u.GetKind() == kind:
					return u, true
				case u.GetKind() == "PartialObjectMetadata" && ofResource && meta == nil:
					meta = u
				}
			}
		}
	}
	if meta != nil {
		meta.SetAPIVersion(apiVersion)
		meta.SetKind(kind)
		return meta, true
	}
	return nil, false
}
