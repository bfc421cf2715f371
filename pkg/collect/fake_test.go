package collect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect/internal/protolist"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// fakeCluster is the collector's clients backed by client-go's fakes. The fake clientset cannot
// serve the raw pod stream (its REST client is nil), so pod LISTs go to podServer through a real
// REST client over an in-memory transport; pod GETs still go to the fake clientset.
type fakeCluster struct {
	kube *kubefake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	meta *metadatafake.FakeMetadataClient
	disc *discoveryfake.FakeDiscovery
	pods *podServer
}

// newFakeCluster serves kube objects through the fake clientset and unstructured ones through
// the dynamic fake; discovery lists the core resources the collector reads.
func newFakeCluster(t *testing.T, objs ...runtime.Object) *fakeCluster {
	t.Helper()
	var typed, dyn []runtime.Object
	for _, o := range objs {
		if _, ok := o.(runtime.Unstructured); ok {
			dyn = append(dyn, o)
		} else {
			typed = append(typed, o)
		}
	}
	c := &fakeCluster{
		kube: kubefake.NewClientset(typed...),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			kruise.CloneSets: "CloneSetList", kruise.StatefulSets: "StatefulSetList", kruise.DaemonSets: "DaemonSetList",
			kruise.SidecarSets: "SidecarSetList", capiCluster: "ClusterList", apiServices: "APIServiceList",
		}, dyn...),
		meta: metadatafake.NewSimpleMetadataClient(scheme.Scheme),
		disc: &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{},
			FakedServerVersion: &version.Info{GitVersion: "v1.37.0", Major: "1", Minor: "37"}},
		pods: &podServer{},
	}
	c.serve("v1", metav1.APIResource{Name: "pods", Kind: "Pod", Namespaced: true},
		metav1.APIResource{Name: "nodes", Kind: "Node"}, metav1.APIResource{Name: "namespaces", Kind: "Namespace"},
		metav1.APIResource{Name: "events", Kind: "Event", Namespaced: true})
	c.serve("apps/v1", metav1.APIResource{Name: "deployments", Kind: "Deployment", Namespaced: true})
	// Every metadata-only list is empty unless a test says otherwise.
	c.meta.PrependReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &metav1.List{}, nil
	})
	return c
}

// serve adds listable resources of group/version to discovery.
func (c *fakeCluster) serve(gv string, resources ...metav1.APIResource) {
	for i := range resources {
		resources[i].Verbs = metav1.Verbs{"get", "list", "watch"}
	}
	c.disc.Resources = append(c.disc.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: resources})
}

// forbid makes the fake clientset refuse verb on resource, in namespace ns ("*" for any).
func (c *fakeCluster) forbid(verb, resource, ns string) {
	c.kube.PrependReactor(verb, resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		if ns != "*" && a.GetNamespace() != ns {
			return false, nil, nil
		}
		gr := a.GetResource().GroupResource()
		return true, nil, apierrors.NewForbidden(gr, "", fmt.Errorf("user cannot %s %s", verb, gr))
	})
}

// clients returns the collector's clients.
func (c *fakeCluster) clients(t *testing.T) Clients {
	t.Helper()
	cfg := &rest.Config{Host: "https://fake.invalid", APIPath: "/api", RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(),
		ContentConfig: rest.ContentConfig{GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}}
	rc, err := rest.RESTClientForConfigAndClient(cfg, &http.Client{Transport: c.pods})
	if err != nil {
		t.Fatal(err)
	}
	return Clients{Kube: podsOverREST{Clientset: c.kube, rest: rc}, Dynamic: c.dyn, Metadata: c.meta, Discovery: c.disc}
}

// podsOverREST is the fake clientset with a working core REST client.
type podsOverREST struct {
	*kubefake.Clientset
	rest rest.Interface
}

func (k podsOverREST) CoreV1() corev1client.CoreV1Interface {
	return coreOverREST{CoreV1Interface: k.Clientset.CoreV1(), rest: k.rest}
}

type coreOverREST struct {
	corev1client.CoreV1Interface
	rest rest.Interface
}

func (c coreOverREST) RESTClient() rest.Interface { return c.rest }

// podServer answers pod LISTs as an apiserver does: metadata-only or full, in protobuf when
// asked, paged by limit and continue, filtered by namespace and label selector.
type podServer struct {
	mu   sync.Mutex
	pods []corev1.Pod
}

func (s *podServer) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := ""
	if rest, ok := strings.CutPrefix(req.URL.Path, "/api/v1/namespaces/"); ok {
		ns, _, _ = strings.Cut(rest, "/")
	}
	q := req.URL.Query()
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, err
	}
	var match []corev1.Pod
	for _, p := range s.pods {
		if (ns == "" || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
			match = append(match, p)
		}
	}
	lm := metav1.ListMeta{ResourceVersion: "100"}
	start, _ := strconv.Atoi(q.Get("continue"))
	match = match[start:]
	if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && limit < len(match) {
		match = match[:limit]
		lm.Continue = strconv.Itoa(start + limit)
	}
	accept := req.Header.Get("Accept")
	var list interface {
		runtime.Object
		Marshal() ([]byte, error)
	}
	if strings.Contains(accept, "as=PartialObjectMetadataList") {
		l := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"}, ListMeta: lm}
		for _, p := range match {
			l.Items = append(l.Items, metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}, ObjectMeta: p.ObjectMeta})
		}
		list = l
	} else {
		list = &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: lm, Items: match}
	}
	if !strings.HasPrefix(accept, "application/vnd.kubernetes.protobuf") {
		return respond(req, http.StatusOK, "application/json", mustJSON(list)), nil
	}
	raw, err := list.Marshal()
	if err != nil {
		return nil, err
	}
	return respond(req, http.StatusOK, "application/vnd.kubernetes.protobuf", protoEnvelope(raw)), nil
}

// protoEnvelope wraps an encoded object as the apiserver sends it: the magic, then a
// runtime.Unknown whose raw field holds it.
func protoEnvelope(raw []byte) []byte {
	env, err := (&runtime.Unknown{Raw: raw, ContentType: "application/vnd.kubernetes.protobuf"}).Marshal()
	if err != nil {
		panic(err)
	}
	return append([]byte(protolist.Magic), env...)
}

func respond(req *http.Request, code int, contentType string, body []byte) *http.Response {
	return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {contentType}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: req}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
