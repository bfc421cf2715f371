package foreign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/version"
)

// document is one decoded file: the objects it holds and whether they came as a list (a List
// object or a JSON array), which says a whole listing was written rather than chosen objects.
type document struct {
	items []*unstructured.Unstructured
	list  bool
	// typed are the apiVersion and kind of each typed list (a ControllerRevisionList), which
	// names its resource even when empty.
	typed [][2]string
}

// decode reads JSON or YAML (several documents allowed): a List, an array of objects, or objects.
func decode(data []byte) (document, error) {
	var doc document
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				return doc, nil
			}
			return document{}, err
		}
		switch v := v.(type) {
		case nil:
		case []any:
			doc.list = true
			if err := doc.addItems(v); err != nil {
				return document{}, err
			}
		case map[string]any:
			if items, ok := v["items"].([]any); ok || isListKind(v) {
				doc.list = true
				n := len(doc.items)
				if err := doc.addItems(items); err != nil {
					return document{}, err
				}
				if apiVersion, kind, ok := typeItems(v, doc.items[n:]); ok {
					doc.typed = append(doc.typed, [2]string{apiVersion, kind})
				}
				continue
			}
			doc.items = append(doc.items, &unstructured.Unstructured{Object: v})
		default:
			return document{}, fmt.Errorf("not a Kubernetes object or list: %T", v)
		}
	}
}

// isListKind reports whether m is a List (kubectl writes an empty one with "items: []", which
// YAML decodes as an empty slice; a list with null items is still a list).
func isListKind(m map[string]any) bool {
	kind, _ := m["kind"].(string)
	_, hasItems := m["items"]
	return hasItems && strings.HasSuffix(kind, "List")
}

// typeItems gives the items of a typed list (a ControllerRevisionList, as the apiserver answers a
// list, e.g. to `kubectl get --raw`) the apiVersion and kind the apiserver leaves out of them.
func typeItems(list map[string]any, items []*unstructured.Unstructured) (apiVersion, kind string, typed bool) {
	apiVersion, _ = list["apiVersion"].(string)
	kind, _ = list["kind"].(string)
	kind, typed = strings.CutSuffix(kind, "List")
	if !typed || kind == "" || apiVersion == "" {
		return "", "", false // kubectl's "List" types its items itself
	}
	for _, u := range items {
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetAPIVersion(apiVersion)
			u.SetKind(kind)
		}
	}
	return apiVersion, kind, true
}

func (d *document) addItems(items []any) error {
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return fmt.Errorf("list item is not an object: %T", it)
		}
		if _, nested := m["items"]; nested {
			// kubectl never nests lists; a file that does is not one of its outputs.
			return errors.New("a list nested in a list")
		}
		d.items = append(d.items, &unstructured.Unstructured{Object: m})
	}
	return nil
}

// crd is what a captured CustomResourceDefinition says of its resource.
type crd struct {
	gr         schema.GroupResource
	kind       string
	namespaced bool
	// versions served, the preferred first (the apiserver's kube-aware order).
	versions []string
}

func crdOf(u *unstructured.Unstructured) (crd, bool) {
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
	if group == "" || plural == "" || kind == "" {
		return crd{}, false
	}
	c := crd{gr: schema.GroupResource{Group: group, Resource: plural}, kind: kind, namespaced: scope != "Cluster"}
	vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range vs {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		if served, ok := m["served"].(bool); name != "" && (!ok || served) {
			c.versions = append(c.versions, name)
		}
	}
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "version"); v != "" && !slices.Contains(c.versions, v) {
		c.versions = append(c.versions, v) // apiextensions.k8s.io/v1beta1
	}
	sort.SliceStable(c.versions, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(c.versions[i], c.versions[j]) > 0
	})
	return c, len(c.versions) > 0
}

// addCRDs makes the resources the captured CRDs define known, so they are discoverable.
func (s *store) addCRDs() []crd {
	r, ok := s.resources[schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}]
	if !ok {
		return nil
	}
	var out []crd
	for _, u := range r.objects[""] {
		c, ok := crdOf(u)
		if !ok {
			continue
		}
		res := s.resource(c.gr, c.kind, c.namespaced)
		for _, v := range c.versions {
			res.addVersion(v)
		}
		out = append(out, c)
	}
	return out
}

// resourceOfKind finds the resource of objects of apiVersion and kind: a built-in, a captured
// CRD's, or one already seen.
func (s *store) resourceOfKind(apiVersion, kind string) (schema.GroupResource, bool) {
	group, _ := groupVersion(apiVersion)
	if b, ok := builtinByKind(group, kind); ok {
		return schema.GroupResource{Group: b.group, Resource: b.resource}, true
	}
	for gr, r := range s.resources {
		if gr.Group == group && r.kind == kind {
			return gr, true
		}
	}
	return schema.GroupResource{}, false
}
