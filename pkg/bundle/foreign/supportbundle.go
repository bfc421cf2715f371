package foreign

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// The layout troubleshoot.sh writes (replicatedhq/troubleshoot: pkg/constants/constants.go,
// pkg/collect/cluster_resources.go CollectClusterResources.Collect, cluster_info.go, logs.go
// savePodLogs):
//
//	cluster-resources/<resource>/<namespace>.json         one list per namespace it could read
//	cluster-resources/<resource>.json                     cluster-scoped resources
//	cluster-resources/<resource>-errors.json              what it could not read
//	cluster-resources/custom-resources/<crd name>/<namespace>.json (and a .yaml link to it);
//	    a namespace without objects of the CRD gets no file, a cluster-scoped CRD <crd name>.json
//	cluster-resources/pods/logs/<namespace>/<pod>/<container>.log (-previous.log): the logs of
//	    unhealthy pods, of a logs collector's pods (linked from <name>/<pod>/<container>.log),
//	    and of a runPod collector's pod (its output)
//	<name>/<name>.json                                    a runPod collector's pod
//	cluster-info/cluster_version.json
const (
	dirClusterResources = "cluster-resources"
	dirCustomResources  = "custom-resources"
	dirPodLogs          = "pods/logs"
	fileClusterVersion  = "cluster-info/cluster_version.json"
)

// supportBundleRoot finds the directory holding cluster-resources/: the root, or the one
// top-level directory an archive unpacks into.
func supportBundleRoot(fsys fs.FS) (string, bool) {
	if isDir(fsys, dirClusterResources) {
		return ".", true
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return "", false
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && isDir(fsys, path.Join(e.Name(), dirClusterResources)) {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) != 1 {
		return "", false
	}
	return dirs[0], true
}

func isDir(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && st.IsDir()
}

// readSupportBundle reads a support bundle rooted at fsys.
func readSupportBundle(fsys fs.FS) (*store, error) {
	s := newStore()
	cr, err := fs.Sub(fsys, dirClusterResources)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dirClusterResources, err)
	}
	entries, err := fs.ReadDir(cr, ".")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dirClusterResources, err)
	}
	// Namespaces first: they say which namespaces a resource directory should cover.
	if err := s.readNamespaces(cr); err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dirCustomResources || name == "namespaces.json":
		case e.IsDir():
			s.readNamespacedDir(cr, name)
		case strings.HasSuffix(name, "-errors.json"):
			s.readErrors(cr, name)
		case strings.HasSuffix(name, ".json"):
			s.readClusterFile(cr, name)
		}
	}
	crds := s.addCRDs()
	s.readCustomResources(cr, crds)
	s.readLogs(cr)
	s.readRunPods(fsys, cr)
	if err := s.readClusterVersion(fsys); err != nil {
		return nil, err
	}
	s.finish()
	return s, nil
}

// readNamespaces reads namespaces.json: a NamespaceList when troubleshoot listed every namespace,
// an array or one Namespace when it was given the namespaces to collect.
func (s *store) readNamespaces(cr fs.FS) error {
	data, err := fs.ReadFile(cr, "namespaces.json")
	if err != nil {
		s.warnings = append(s.warnings, "the support bundle has no namespaces.json: nothing is known to be listed in every namespace")
		return nil
	}
	doc, err := decode(data)
	if err != nil {
		return fmt.Errorf("read %s/namespaces.json: %w", dirClusterResources, err)
	}
	r := s.resource(schema.GroupResource{Resource: "namespaces"}, "Namespace", false)
	for _, u := range doc.items {
		s.fill(u, r)
		r.add(u)
		s.namespaces = append(s.namespaces, u.GetName())
	}
	var head struct{ Kind string }
	_ = json.Unmarshal(data, &head)
	s.namespacesAll = head.Kind == "NamespaceList"
	r.all = s.namespacesAll
	return nil
}

// readNamespacedDir reads cluster-resources/<resource>/<namespace>.json.
func (s *store) readNamespacedDir(cr fs.FS, dir string) {
	b, ok := builtinByFile(dir)
	if !ok || !b.namespaced {
		return // auth-cani-list, image-pull-secrets: not objects
	}
	r := s.resource(schema.GroupResource{Group: b.group, Resource: b.resource}, b.kind, true)
	files, err := fs.ReadDir(cr, dir)
	if err != nil {
		s.warnings = append(s.warnings, fmt.Sprintf("%s/%s not read: %v", dirClusterResources, dir, err))
		return
	}
	for _, f := range files {
		ns, ok := strings.CutSuffix(f.Name(), ".json")
		if f.IsDir() || !ok {
			continue
		}
		if s.readFile(cr, path.Join(dir, f.Name()), r) {
			r.listed[ns] = true
		}
	}
}

// readClusterFile reads cluster-resources/<resource>.json of a cluster-scoped resource.
func (s *store) readClusterFile(cr fs.FS, name string) {
	b, ok := builtinByFile(strings.TrimSuffix(name, ".json"))
	if !ok || b.namespaced {
		return // groups.json, resources.json: discovery, not objects
	}
	r := s.resource(schema.GroupResource{Group: b.group, Resource: b.resource}, b.kind, false)
	if s.readFile(cr, name, r) {
		r.all = true
	}
}

// readFile adds the objects of one list file to r; a file that does not decode is skipped with
// a warning and counts as not captured.
func (s *store) readFile(fsys fs.FS, name string, r *resource) bool {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		s.warnings = append(s.warnings, fmt.Sprintf("%s not read: %v", name, err))
		return false
	}
	doc, err := decode(data)
	if err != nil || !doc.list {
		s.warnings = append(s.warnings, fmt.Sprintf("%s skipped: not a list (%v)", name, err))
		return false
	}
	for _, u := range doc.items {
		s.fill(u, r)
		r.add(u)
	}
	return true
}

// fill gives an object the apiVersion and kind that older troubleshoot releases left out of list
// items, and records the version it was read at.
func (s *store) fill(u *unstructured.Unstructured, r *resource) {
	if u.GetKind() == "" {
		u.SetKind(r.kind)
	}
	if u.GetAPIVersion() == "" && len(r.versions) > 0 {
		u.SetAPIVersion(schema.GroupVersion{Group: r.group, Version: r.versions[0]}.String())
	}
	_, v := groupVersion(u.GetAPIVersion())
	r.addVersion(v)
}

// readErrors turns <resource>-errors.json into a warning: what troubleshoot could not read.
func (s *store) readErrors(cr fs.FS, name string) {
	data, err := fs.ReadFile(cr, name)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return
	}
	var errs any
	if json.Unmarshal(data, &errs) != nil {
		return
	}
	var msgs []string
	switch e := errs.(type) {
	case []any:
		for _, m := range e {
			msgs = append(msgs, fmt.Sprint(m))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(e)) {
			msgs = append(msgs, fmt.Sprintf("%s: %v", k, e[k]))
		}
	}
	if len(msgs) > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf("the support bundle could not read (%s): %s", name, strings.Join(msgs, "; ")))
	}
}

// readCustomResources reads custom-resources/<crd name>/<namespace>.json (a cluster-scoped
// CRD's in custom-resources/<crd name>.json). Troubleshoot lists every CRD's objects
// cluster-wide, keeps the namespaces it collects, and writes a file only where there are objects
// (pkg/collect/cluster_resources.go crsV1: an empty list is skipped), and the directory only
// when it writes a file or an error (util.go marshalErrors yields nothing for no errors). So a
// CRD it listed without an error recorded holds no objects where it wrote none, whether or not
// the directory exists; the namespaces it collected are those it listed pods in.
func (s *store) readCustomResources(cr fs.FS, crds []crd) {
	dir := dirCustomResources
	names := map[string]bool{}
	for _, c := range crds {
		names[c.gr.Resource+"."+c.gr.Group] = true
	}
	failed := map[string]bool{}
	listed := true
	errFile := path.Join(dir, dirCustomResources+"-errors.json")
	if data, err := fs.ReadFile(cr, errFile); err == nil {
		var errs map[string]any
		if json.Unmarshal(data, &errs) != nil {
			listed = false
		}
		for k := range errs {
			// Keyed <crd name> or <crd name>/<namespace>; any other key (crdList, crdClient,
			// discover ...) is a failure before any CRD was listed.
			name := strings.SplitN(k, "/", 2)[0]
			failed[name] = true
			listed = listed && names[name]
		}
		s.readErrors(cr, errFile)
	}
	pods := s.resources[schema.GroupResource{Resource: "pods"}]
	for _, c := range crds {
		r := s.resources[c.gr]
		if !listed || failed[c.gr.Resource+"."+c.gr.Group] {
			continue
		}
		if !c.namespaced {
			r.all = true
			s.readCRFile(cr, path.Join(dir, c.gr.Resource+"."+c.gr.Group), r)
			continue
		}
		if pods == nil {
			continue
		}
		for ns := range pods.listed {
			r.listed[ns] = true
		}
	}
	entries, err := fs.ReadDir(cr, dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		plural, group, _ := strings.Cut(e.Name(), ".")
		gr := schema.GroupResource{Group: group, Resource: plural}
		r, known := s.resources[gr]
		if !known {
			r = s.resource(gr, "", true)
		}
		files, _ := fs.ReadDir(cr, path.Join(dir, e.Name()))
		seen := map[string]bool{}
		for _, f := range files {
			ns := strings.TrimSuffix(strings.TrimSuffix(f.Name(), ".json"), ".yaml")
			if f.IsDir() || ns == f.Name() || seen[ns] {
				continue // the .yaml is a link to the .json
			}
			seen[ns] = true
			if s.readCRFile(cr, path.Join(dir, e.Name(), f.Name()), r) && !known {
				r.listed[ns] = true
			}
		}
	}
}

// AnnotationClusterWideLists on a runPod collector's pod says that its output is the lists of
// whole resources, every namespace: the apiserver's answers to cluster-wide paths. Nothing else
// in a bundle says which path a list answered.
const AnnotationClusterWideLists = "workloaddoctor.io/cluster-wide-lists"

// listedEverywhere marks the resources of doc's typed lists listed in every namespace.
func (s *store) listedEverywhere(doc document) {
	for _, tl := range doc.typed {
		if gr, ok := s.resourceOfKind(tl[0], tl[1]); ok {
			s.resource(gr, tl[1], false).all = true // a built-in's or CRD's own scope kept
		}
	}
}

// readRunPods reads what runPod collectors printed as kubectl outputs. A runPod collector saves
// its pod, spec stripped, as <name>/<name>.json at the bundle's root, labelled
// troubleshoot-role=run-collector, and its log as that pod's under pods/logs
// (pkg/collect/run_pod.go createPodStruct, savePodDetails, runWithoutTimeout). A log holding a
// Kubernetes List counts as a list made by kubectl, and, when the pod is annotated
// AnnotationClusterWideLists, each typed list in it (`kubectl get --raw
// /apis/apps/v1/controllerrevisions`) as its resource listed in every namespace, empty or not.
// Any other log is only a log.
func (s *store) readRunPods(fsys, cr fs.FS) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == dirClusterResources {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(e.Name(), e.Name()+".json"))
		if err != nil {
			continue
		}
		var pod struct {
			Metadata struct {
				Name, Namespace     string
				Labels, Annotations map[string]string
			}
		}
		if json.Unmarshal(data, &pod) != nil || pod.Metadata.Labels["troubleshoot-role"] != "run-collector" {
			continue
		}
		logs := path.Join(dirPodLogs, pod.Metadata.Namespace, pod.Metadata.Name)
		files, _ := fs.ReadDir(cr, logs)
		for _, f := range files {
			name := f.Name()
			if f.IsDir() || !strings.HasSuffix(name, ".log") || strings.HasSuffix(name, "-previous.log") || strings.HasSuffix(name, "-logs-errors.log") {
				continue
			}
			p := path.Join(logs, name)
			out, err := fs.ReadFile(cr, p)
			if err != nil {
				s.warnings = append(s.warnings, fmt.Sprintf("%s/%s not read: %v", dirClusterResources, p, err))
				continue
			}
			wide := pod.Metadata.Annotations[AnnotationClusterWideLists] == "true"
			if doc, err := decode(out); err != nil || !doc.list {
				if wide {
					// troubleshoot keeps a pod's log up to its collector's limit (5 MB unless set):
					// lists cut there decode as nothing, and their resources stay unread.
					s.warnings = append(s.warnings, fmt.Sprintf("%s/%s is not a whole list, perhaps cut at the collector's log limit: "+
						"what it lists is taken as not captured", dirClusterResources, p))
				}
				continue // a runPod that prints no list
			}
			f, ok := s.kubectlOutput(path.Join(dirClusterResources, p), out)
			if !ok {
				continue
			}
			s.addKubectlFile(f)
			if wide {
				s.listedEverywhere(f.doc)
			}
		}
	}
}

// readCRFile reads one custom-resources file: an array of objects, as troubleshoot writes it.
func (s *store) readCRFile(cr fs.FS, base string, r *resource) bool {
	for _, ext := range []string{"", ".json", ".yaml"} {
		if st, err := fs.Stat(cr, base+ext); err != nil || st.IsDir() {
			continue
		}
		if !s.readFile(cr, base+ext, r) {
			return false
		}
		for _, objs := range r.objects {
			for _, u := range objs {
				if r.kind == "" {
					r.kind = u.GetKind()
				}
			}
		}
		return true
	}
	return false
}

// readLogs reads pods/logs/<namespace>/<pod>/<container>.log.
func (s *store) readLogs(cr fs.FS) {
	_ = fs.WalkDir(cr, dirPodLogs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".log") || strings.HasSuffix(p, "-logs-errors.log") {
			return nil
		}
		rel := strings.TrimPrefix(p, dirPodLogs+"/")
		parts := strings.Split(strings.TrimSuffix(rel, ".log"), "/")
		if len(parts) != 3 {
			return nil
		}
		if data, err := fs.ReadFile(cr, p); err == nil {
			s.logs[strings.Join(parts, "/")] = string(data)
		}
		return nil
	})
}

// readClusterVersion reads cluster-info/cluster_version.json ({"info": version.Info, "string": ...}).
func (s *store) readClusterVersion(fsys fs.FS) error {
	data, err := fs.ReadFile(fsys, fileClusterVersion)
	if err != nil {
		s.warnings = append(s.warnings, "the support bundle has no "+fileClusterVersion+": the server version is unknown")
		return nil
	}
	var cv struct {
		Info *version.Info `json:"info"`
	}
	if err := json.Unmarshal(data, &cv); err != nil {
		return fmt.Errorf("read %s: %w", fileClusterVersion, err)
	}
	s.version = cv.Info
	return nil
}

// logKey names a captured log.
func logKey(ns, pod, container string, previous bool) string {
	k := ns + "/" + pod + "/" + container
	if previous {
		k += "-previous"
	}
	return k
}

// sortedResources are the captured resources in a stable order.
func (s *store) sortedResources() []*resource {
	out := make([]*resource, 0, len(s.resources))
	for _, r := range s.resources {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].group != out[j].group {
			return out[i].group < out[j].group
		}
		return out[i].name < out[j].name
	})
	return out
}
