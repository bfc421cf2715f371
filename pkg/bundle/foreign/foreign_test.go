package foreign

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
)

const podList = `{"apiVersion":"v1","kind":"PodList","items":[
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"shop","labels":{"app":"web"},"creationTimestamp":"2026-11-28T06:00:00Z"}},
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"db-1","namespace":"shop","labels":{"app":"db"},"creationTimestamp":"2026-11-28T06:10:00Z"}}]}`

const nsList = `{"apiVersion":"v1","kind":"NamespaceList","items":[
 {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","uid":"u-shop"}},
 {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-system","uid":"u-ks"}}]}`

func get(t *testing.T, src *source.Source, path, accept string) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://bundle.invalid"+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := src.Transport.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body), nil
}

func TestOpenSupportBundleInItsArchiveDirectory(t *testing.T) {
	fsys := fstest.MapFS{
		"support-bundle-x/cluster-resources/namespaces.json": {Data: []byte(nsList)},
		"support-bundle-x/cluster-resources/pods/shop.json":  {Data: []byte(podList)},
	}
	src, err := Open(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if src.Format != source.FormatSupportBundle || src.ClusterID != "u-ks" {
		t.Fatalf("format %q clusterID %q", src.Format, src.ClusterID)
	}
	if src.CapturedAt.Format("15:04") != "06:10" {
		t.Errorf("capturedAt %v, want the newest object time", src.CapturedAt)
	}
	// A label selector filters; metadata-only answers when asked.
	_, body, err := get(t, src, "/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	if err != nil || !strings.Contains(body, "PartialObjectMetadataList") || !strings.Contains(body, "web-1") || strings.Contains(body, "db-1") {
		t.Errorf("filtered metadata list: %v\n%s", err, body)
	}
	// A pod the captured list of its namespace lacks is gone; a resource never captured is not.
	if resp, _, err := get(t, src, "/api/v1/namespaces/shop/pods/gone", ""); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of an absent pod: %v %v, want 404", resp, err)
	}
	var nc *source.NotCapturedError
	if _, _, err := get(t, src, "/apis/coordination.k8s.io/v1/namespaces/shop/leases", ""); !errors.As(err, &nc) {
		t.Errorf("leases: %v, want NotCapturedError", err)
	}
	// A namespace the complete namespace list lacks did not exist: an empty list.
	if _, body, err := get(t, src, "/api/v1/namespaces/absent/pods", ""); err != nil || strings.Contains(body, "web-1") {
		t.Errorf("pods of a namespace that did not exist: %v %s", err, body)
	}
}

func TestOpenKubectlListsAndRefuseOthers(t *testing.T) {
	src, err := Open(fstest.MapFS{
		"a/shop.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\n  namespace: shop\n  creationTimestamp: \"2026-11-28T06:00:00Z\"\n")},
	})
	if err != nil || src.Format != source.FormatKubectlLists {
		t.Fatalf("kubectl file: %v %+v", err, src)
	}
	if _, err := Open(fstest.MapFS{"notes.txt": {Data: []byte("hello")}}); !errors.Is(err, ErrNotRecognized) {
		t.Errorf("a directory without objects: %v, want ErrNotRecognized", err)
	}
	if _, err := Open(fstest.MapFS{"bundle.yaml": {Data: []byte("kind: Bundle")}}); !errors.Is(err, ErrNotRecognized) {
		t.Errorf("the tool's own bundle: %v, want ErrNotRecognized", err)
	}
}

const crdList = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinitionList","items":[
 {"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
  "spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true}]}},
 {"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.example.com"},
  "spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"gadgets","kind":"Gadget"},"versions":[{"name":"v1","served":true}]}}]}`

// A CRD troubleshoot listed without objects leaves no file and, when no CRD has objects or
// errors, no custom-resources/ directory: replicatedhq/troubleshoot v0.133.0
// pkg/collect/cluster_resources.go crsV1 skips an empty list and writes only the namespaces it
// collected (those it listed pods in), and util.go marshalErrors gives SaveResult nothing for
// no errors. Such a CRD is captured and empty; one the errors file names, or every CRD when the
// listing failed before any (crdList), is not captured.
func TestSupportBundleCustomResourcesListedEmpty(t *testing.T) {
	base := fstest.MapFS{
		"cluster-resources/namespaces.json":                  {Data: []byte(nsList)},
		"cluster-resources/pods/shop.json":                   {Data: []byte(podList)},
		"cluster-resources/pods/kube-system.json":            {Data: []byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`)},
		"cluster-resources/custom-resource-definitions.json": {Data: []byte(crdList)},
	}
	open := func(t *testing.T, extra map[string]string) *source.Source {
		t.Helper()
		fsys := fstest.MapFS{}
		for k, v := range base {
			fsys[k] = v
		}
		for k, v := range extra {
			fsys[k] = &fstest.MapFile{Data: []byte(v)}
		}
		src, err := Open(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	var nc *source.NotCapturedError
	src := open(t, nil)
	for _, p := range []string{"/apis/example.com/v1/widgets", "/apis/example.com/v1/namespaces/shop/widgets"} {
		if resp, body, err := get(t, src, p, ""); err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, `"items":[]`) {
			t.Errorf("%s of a CRD listed empty: %v %s, want an empty list", p, err, body)
		}
	}
	if resp, _, err := get(t, src, "/apis/example.com/v1/namespaces/shop/widgets/w", ""); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET in a CRD listed empty: %v %v, want 404", resp, err)
	}

	// Troubleshoot keys a CRD's error by its name, or <name>/<namespace>.
	src = open(t, map[string]string{"cluster-resources/custom-resources/custom-resources-errors.json": `{"gadgets.example.com":"forbidden"}`})
	if _, _, err := get(t, src, "/apis/example.com/v1/namespaces/shop/gadgets", ""); !errors.As(err, &nc) {
		t.Errorf("a CRD the errors file names: %v, want NotCapturedError", err)
	}
	if _, _, err := get(t, src, "/apis/example.com/v1/namespaces/shop/widgets", ""); err != nil {
		t.Errorf("a CRD listed next to one that failed: %v", err)
	}
	src = open(t, map[string]string{"cluster-resources/custom-resources/custom-resources-errors.json": `{"crdList":"forbidden"}`})
	if _, _, err := get(t, src, "/apis/example.com/v1/namespaces/shop/widgets", ""); !errors.As(err, &nc) {
		t.Errorf("CRDs after the CRD listing failed: %v, want NotCapturedError", err)
	}

	// A namespace it listed no pods in (filtered out for RBAC, or failed) it did not collect.
	delete(base, "cluster-resources/pods/kube-system.json")
	src = open(t, nil)
	if _, _, err := get(t, src, "/apis/example.com/v1/namespaces/kube-system/widgets", ""); !errors.As(err, &nc) {
		t.Errorf("a CRD in a namespace without pods listed: %v, want NotCapturedError", err)
	}
	if _, _, err := get(t, src, "/apis/example.com/v1/namespaces/shop/widgets", ""); err != nil {
		t.Errorf("a CRD in a namespace with pods listed: %v", err)
	}
}

// runPodBundle is a bundle whose runPod collector printed list: replicatedhq/troubleshoot
// v0.133.0 pkg/collect/run_pod.go createPodStruct labels the pod troubleshoot-role=run-collector,
// savePodDetails writes it as <name>/<name>.json, and runWithoutTimeout saves its log with
// logs.go savePodLogs under pods/logs/<namespace>/<pod>/<container>.log.
func runPodBundle(label, list string) fstest.MapFS {
	return runPodBundleAnnotated(label, "", list)
}

func runPodBundleAnnotated(label, annotations, list string) fstest.MapFS {
	if annotations == "" {
		annotations = "{}"
	}
	return fstest.MapFS{
		"cluster-resources/namespaces.json":                         {Data: []byte(nsList)},
		"cluster-resources/pods/shop.json":                          {Data: []byte(podList)},
		"revisions/revisions.json":                                  {Data: []byte(`{"metadata":{"name":"revisions","namespace":"default","labels":{"troubleshoot-role":"` + label + `"},"annotations":` + annotations + `},"status":{"phase":"Succeeded"}}`)},
		"cluster-resources/pods/logs/default/revisions/kubectl.log": {Data: []byte(list)},
	}
}

// The apiserver's list, as `kubectl get --raw` prints it: one line, items untyped.
const revisionList = `{"kind":"ControllerRevisionList","apiVersion":"apps/v1","metadata":{"resourceVersion":"900"},"items":[` +
	`{"metadata":{"name":"db-7c9","namespace":"shop","creationTimestamp":"2026-11-28T06:20:00Z"},"revision":2},` +
	`{"metadata":{"name":"proxy-5f8","namespace":"kube-system"},"revision":1}]}`

func TestSupportBundleRunPodList(t *testing.T) {
	src, err := Open(runPodBundle("run-collector", revisionList+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, body, err := get(t, src, "/apis/apps/v1/namespaces/shop/controllerrevisions/db-7c9", ""); err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, `"revision":2`) {
		t.Errorf("GET of a listed revision: %v %s", err, body)
	}
	// Objects in two namespaces: a list of every namespace (as kubectl -A), a name not in it gone.
	if resp, _, err := get(t, src, "/apis/apps/v1/namespaces/other/controllerrevisions/x", ""); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of an absent revision: %v %v, want 404", resp, err)
	}
	if src.CapturedAt.Format("15:04") != "06:20" {
		t.Errorf("capturedAt %v, want the newest time the revisions record too", src.CapturedAt)
	}

	// A pod troubleshoot did not run, or a runPod printing no list, adds nothing.
	var nc *source.NotCapturedError
	for name, fsys := range map[string]fstest.MapFS{
		"not a runPod":   runPodBundle("web", revisionList),
		"not a list":     runPodBundle("run-collector", "db-7c9\nproxy-5f8\n"),
		"a cut-off list": runPodBundle("run-collector", revisionList[:len(revisionList)/2]),
	} {
		src, err := Open(fsys)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, _, err := get(t, src, "/apis/apps/v1/namespaces/shop/controllerrevisions/db-7c9", ""); !errors.As(err, &nc) {
			t.Errorf("%s: %v, want NotCapturedError", name, err)
		}
	}
}

// A logs collector's output is a pod's log under pods/logs (replicatedhq/troubleshoot v0.133.0
// pkg/collect/logs.go savePodLogs; <name>/<pod>/<container>.log only links to it), with the
// kubelet's timestamps when its timestamps field is set. Leases are in clusterResources' output
// since v0.70.3 (cluster_resources.go leases).
func TestSupportBundleLogsCollectorAndLeases(t *testing.T) {
	fsys := fstest.MapFS{
		"cluster-resources/namespaces.json":                       {Data: []byte(nsList)},
		"cluster-resources/pods/shop.json":                        {Data: []byte(podList)},
		"cluster-resources/leases/shop.json":                      {Data: []byte(`{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","items":[{"metadata":{"name":"op","namespace":"shop"},"spec":{"holderIdentity":"web-1_x"}}]}`)},
		"cluster-resources/leases/kube-system.json":               {Data: []byte(`{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","items":[]}`)},
		"cluster-resources/pods/logs/shop/web-1/app.log":          {Data: []byte("2026-11-28T06:30:00.000000001Z first\n2026-11-28T06:31:00Z second\n")},
		"cluster-resources/pods/logs/shop/db-1/db.log":            {Data: []byte("plain line\n")},
		"cluster-resources/pods/logs/shop/db-1/db-previous.log":   {Data: []byte("before the restart\n")},
		"cluster-resources/pods/logs/shop/web-1/app-previous.log": {Data: []byte("")},
	}
	src, err := Open(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/api/v1/namespaces/shop/pods/web-1/log?container=app&timestamps=true": "2026-11-28T06:30:00.000000001Z first\n2026-11-28T06:31:00Z second\n",
		"/api/v1/namespaces/shop/pods/web-1/log?container=app":                 "first\nsecond\n",
		"/api/v1/namespaces/shop/pods/web-1/log?container=app&tailLines=1":     "second\n",
		"/api/v1/namespaces/shop/pods/db-1/log?container=db":                   "plain line\n",
		"/api/v1/namespaces/shop/pods/db-1/log?container=db&previous=true":     "before the restart\n",
	} {
		if _, body, err := get(t, src, path, ""); err != nil || body != want {
			t.Errorf("%s: %v %q, want %q", path, err, body, want)
		}
	}
	var nc *source.NotCapturedError
	if _, _, err := get(t, src, "/api/v1/namespaces/shop/pods/db-1/log?container=db&timestamps=true", ""); !errors.As(err, &nc) {
		t.Errorf("a log captured without timestamps read with them: %v, want NotCapturedError", err)
	}
	if _, body, err := get(t, src, "/apis/coordination.k8s.io/v1/leases", ""); err != nil || !strings.Contains(body, `"holderIdentity":"web-1_x"`) {
		t.Errorf("leases of every namespace: %v %s", err, body)
	}
}

// Which path a list answered is not in the bundle: a typed list counts as one of every namespace,
// empty or in one namespace, only from a pod annotated AnnotationClusterWideLists (the README's
// runPod collectors set it: their pod's annotations are kept by run_pod.go savePodDetails).
func TestSupportBundleRunPodClusterWideLists(t *testing.T) {
	oneNS := `{"kind":"ControllerRevisionList","apiVersion":"apps/v1","metadata":{},"items":[{"metadata":{"name":"db-7c9","namespace":"shop"}}]}` + "\n" +
		`{"kind":"APIServiceList","apiVersion":"apiregistration.k8s.io/v1","metadata":{},"items":[]}`
	var nc *source.NotCapturedError
	src, err := Open(runPodBundle("run-collector", oneNS))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(t, src, "/apis/apps/v1/namespaces/kube-system/controllerrevisions/x", ""); !errors.As(err, &nc) {
		t.Errorf("a revision outside the one namespace listed: %v, want NotCapturedError", err)
	}
	if _, _, err := get(t, src, "/apis/apiregistration.k8s.io/v1/apiservices", ""); !errors.As(err, &nc) {
		t.Errorf("an empty list not said to be whole: %v, want NotCapturedError", err)
	}
	src, err = Open(runPodBundleAnnotated("run-collector", `{"`+AnnotationClusterWideLists+`":"true"}`, oneNS))
	if err != nil {
		t.Fatal(err)
	}
	if resp, _, err := get(t, src, "/apis/apps/v1/namespaces/kube-system/controllerrevisions/x", ""); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("a revision outside a cluster-wide list: %v %v, want 404", resp, err)
	}
	if resp, body, err := get(t, src, "/apis/apiregistration.k8s.io/v1/apiservices", ""); err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(body, `"items":[]`) {
		t.Errorf("an empty cluster-wide list: %v %s, want an empty list", err, body)
	}
	cut := func(w string) bool { return strings.Contains(w, "is not a whole list") }
	if slices.ContainsFunc(src.Warnings, cut) {
		t.Errorf("warnings %q for whole lists", src.Warnings)
	}

	// Output cut short (troubleshoot's log limit): not captured, and a warning names the file.
	src, err = Open(runPodBundleAnnotated("run-collector", `{"`+AnnotationClusterWideLists+`":"true"}`, revisionList[:len(revisionList)/2]))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := get(t, src, "/apis/apps/v1/controllerrevisions", ""); !errors.As(err, &nc) {
		t.Errorf("a cut-off cluster-wide list: %v, want NotCapturedError", err)
	}
	if !slices.ContainsFunc(src.Warnings, func(w string) bool {
		return cut(w) && strings.Contains(w, "cluster-resources/pods/logs/default/revisions/kubectl.log")
	}) {
		t.Errorf("warnings %q: want the cut-off output named", src.Warnings)
	}
}
