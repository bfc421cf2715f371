package foreign

import (
	"errors"
	"io"
	"net/http"
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
