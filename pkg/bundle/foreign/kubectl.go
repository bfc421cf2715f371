package foreign

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What a directory of `kubectl get -o yaml|json` outputs says of what was listed. A file does not
// record the command that wrote it, so it is read from the objects:
//   - a List holding objects of a resource in two or more namespaces came from `-A`: that resource
//     was listed in every namespace;
//   - a List holding them in one namespace: listed in that namespace (-A may have found objects
//     only there; taking less is the safe side);
//   - a List of cluster-scoped objects: listed whole;
//   - a single object, or a resource with no objects in any List (kubectl's empty List names no
//     kind): not listed, so a scan records it as unread rather than empty.

// kubectlFile is one file's objects, before the CRDs among them are known.
type kubectlFile struct {
	name string
	doc  document
}

// readKubectlLists reads every .yaml, .yml and .json file under fsys. It reports whether any held
// Kubernetes objects.
func readKubectlLists(fsys fs.FS) (*store, bool, error) {
	s := newStore()
	var files []kubectlFile
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if f, ok := s.kubectlOutput(p, data); ok {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	found := false
	// CRDs first: they say the resource and scope of the custom objects.
	crds := s.resource(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "", false)
	for _, f := range files {
		for _, u := range f.doc.items {
			if u.GetKind() == "CustomResourceDefinition" {
				crds.add(u)
			}
		}
	}
	s.addCRDs()
	for _, f := range files {
		found = s.addKubectlFile(f) || found
	}
	if len(crds.objects) == 0 {
		delete(s.resources, schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"})
	}
	if r, ok := s.resources[schema.GroupResource{Resource: "namespaces"}]; ok && r.all {
		for _, u := range r.objects[""] {
			s.namespaces = append(s.namespaces, u.GetName())
		}
		s.namespacesAll = true
	}
	s.warnings = append(s.warnings, "kubectl outputs do not record what was asked: a resource counts as listed only "+
		"where a List holds its objects (in every namespace when they span several), so a resource none was found of is unread")
	s.finish()
	return s, found, nil
}

// kubectlOutput decodes one kubectl output, keeping the entries that are objects.
func (s *store) kubectlOutput(name string, data []byte) (kubectlFile, bool) {
	doc, err := decode(data)
	if err != nil {
		s.warnings = append(s.warnings, fmt.Sprintf("%s skipped: %v", name, err))
		return kubectlFile{}, false
	}
	var kept []*unstructured.Unstructured
	for _, u := range doc.items {
		if u.GetAPIVersion() != "" && u.GetKind() != "" && u.GetName() != "" {
			kept = append(kept, u)
		}
	}
	if len(kept) < len(doc.items) {
		s.warnings = append(s.warnings, fmt.Sprintf("%s: %d entries without apiVersion, kind and name skipped", name, len(doc.items)-len(kept)))
	}
	doc.items = kept
	return kubectlFile{name: name, doc: doc}, true
}

// addKubectlFile adds one file's objects and what its lists cover.
func (s *store) addKubectlFile(f kubectlFile) bool {
	namespaces := map[*resource]map[string]bool{}
	for _, u := range f.doc.items {
		gr, ok := s.resourceOfKind(u.GetAPIVersion(), u.GetKind())
		if !ok {
			s.warnings = append(s.warnings, fmt.Sprintf("%s: %s %s skipped: no captured CustomResourceDefinition names its resource", f.name, u.GetAPIVersion(), u.GetKind()))
			continue
		}
		r := s.resource(gr, u.GetKind(), u.GetNamespace() != "")
		if r.kind == "CustomResourceDefinition" {
			if f.doc.list {
				r.all = true
			}
			continue // added before the others
		}
		s.fill(u, r)
		r.add(u)
		if namespaces[r] == nil {
			namespaces[r] = map[string]bool{}
		}
		namespaces[r][u.GetNamespace()] = true
	}
	if !f.doc.list {
		return len(namespaces) > 0
	}
	for r, nss := range namespaces {
		switch {
		case !r.namespaced || len(nss) > 1:
			r.all = true
		default:
			for ns := range nss {
				r.listed[ns] = true
			}
		}
	}
	return len(namespaces) > 0
}
