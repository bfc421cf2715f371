package collect

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	clienttesting "k8s.io/client-go/testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

var allNamespaces = Options{Scope: snapshot.Scope{AllNamespaces: true}}

func collect(t *testing.T, c *fakeCluster, opts Options, inputs ...snapshot.Input) *snapshot.Snapshot {
	t.Helper()
	if opts.Retry == (retry.Policy{}) {
		opts.Retry = fastRetry
	}
	s, err := Collect(context.Background(), c.clients(t), opts, inputs)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return s
}

// fastRetry retries as the collector does, without the waits.
var fastRetry = retry.Policy{Base: time.Microsecond, Max: time.Microsecond}

// unread returns the snapshot's unread inputs as text.
func unread(s *snapshot.Snapshot) map[snapshot.Input]string {
	out := map[snapshot.Input]string{}
	for in, err := range s.Unread {
		out[in] = err.Error()
	}
	return out
}

func pod(ns, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: labels},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
}

func TestCollectObjectsBeingDeleted(t *testing.T) {
	deleting := metav1.NewTime(time.Now().Add(-time.Hour))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", DeletionTimestamp: &deleting, Finalizers: []string{"example.com/f"}}}
	c := newFakeCluster(t, node)
	c.serve("v1", metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true},
		metav1.APIResource{Name: "secrets", Kind: "Secret", Namespaced: true}, metav1.APIResource{Name: "componentstatuses", Kind: "ComponentStatus"})
	c.serve("example.com/v1", metav1.APIResource{Name: "widgets", Kind: "Widget"}, metav1.APIResource{Name: "gadgets", Kind: "Gadget"},
		metav1.APIResource{Name: "things", Kind: "Thing"}, metav1.APIResource{Name: "widgets/status", Kind: "Widget"})
	c.disc.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("503")}}
	})
	cm := func(name string, deleted bool) runtime.RawExtension {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
		if deleted {
			m.DeletionTimestamp = &deleting
		}
		return runtime.RawExtension{Object: m}
	}
	errs := map[string]error{
		"secrets": apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("no")),
		"widgets": apierrors.NewForbidden(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "", errors.New("no")),
		"gadgets": apierrors.NewInternalError(errors.New("etcd timeout")),
		"things":  apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "things"}, ""),
	}
	var listed []string
	c.meta.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		r := a.GetResource().Resource
		listed = append(listed, r)
		if err := errs[r]; err != nil {
			return true, nil, err
		}
		if r == "configmaps" {
			return true, &metav1.List{Items: []runtime.RawExtension{cm("kept", false), cm("stuck", true)}}, nil
		}
		return true, &metav1.List{}, nil
	})
	s := collect(t, c, allNamespaces, snapshot.InputObjects, snapshot.InputNodes)

	slices.Sort(listed)
	// Pods, events, namespaces and component statuses are never listed; nodes are read whole by
	// their own input. Only the 500 is retried, up to the policy's five attempts.
	if want := []string{"configmaps", "deployments", "gadgets", "gadgets", "gadgets", "gadgets", "gadgets", "secrets", "things", "widgets"}; !reflect.DeepEqual(listed, want) {
		t.Errorf("listed metadata-only %v, want %v", listed, want)
	}
	var got []string
	for _, o := range s.Objects {
		got = append(got, o.Kind+" "+o.Meta.Namespace+"/"+o.Meta.Name)
	}
	slices.Sort(got)
	if want := []string{"ConfigMap shop/stuck", "Node /node-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}
	want := "discovery failed for metrics.k8s.io/v1beta1; forbidden: list example.com/widgets; " +
		"failed: list example.com/gadgets (Internal error occurred: etcd timeout (tried 5 times))"
	if got := unread(s); len(got) != 1 || got[snapshot.InputObjects] != want {
		t.Errorf("unread = %v, want objects: %s", got, want)
	}
	if got := s.Limits[snapshot.InputObjects]; !strings.HasPrefix(got, "secrets not listed") {
		t.Errorf("limits = %v, want the secrets stated", s.Limits)
	}
}

func TestCollectOpenKruiseAndOptionalAPIs(t *testing.T) {
	obj := func(gvr schema.GroupVersionResource, kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	c := newFakeCluster(t,
		obj(kruise.CloneSets, kruise.KindCloneSet, "shop", "web"), obj(kruise.StatefulSets, kruise.KindStatefulSet, "shop", "db"),
		obj(kruise.SidecarSets, "SidecarSet", "", "mesh"), obj(capiCluster, "Cluster", "shop", "prod"), obj(apiServices, "APIService", "", "v1beta1.metrics.k8s.io"))
	c.serve(kruise.CloneSets.GroupVersion().String(), metav1.APIResource{Name: "clonesets", Kind: "CloneSet", Namespaced: true},
		metav1.APIResource{Name: "sidecarsets", Kind: "SidecarSet"})
	c.serve(kruise.StatefulSets.GroupVersion().String(), metav1.APIResource{Name: "statefulsets", Kind: "StatefulSet", Namespaced: true})
	c.serve(capiCluster.GroupVersion().String(), metav1.APIResource{Name: "clusters", Kind: "Cluster", Namespaced: true})
	c.serve(apiServices.GroupVersion().String(), metav1.APIResource{Name: "apiservices", Kind: "APIService"})
	c.dyn.PrependReactor("list", "clonesets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(kruise.CloneSets.GroupResource(), "", errors.New("no"))
	})
	s := collect(t, c, allNamespaces, snapshot.InputKruiseWorkloads, snapshot.InputSidecarSets, snapshot.InputClusterAPI, snapshot.InputAPIServices)

	want := map[snapshot.Input]string{snapshot.InputKruiseWorkloads: "forbidden: list apps.kruise.io/clonesets"}
	if got := unread(s); !reflect.DeepEqual(got, want) {
		t.Errorf("unread = %v, want %v", got, want)
	}
	if len(s.Workloads) != 1 || s.Workloads[0].Name != "db" || len(s.SidecarSets) != 1 || len(s.Clusters) != 1 || len(s.APIServices) != 1 {
		t.Errorf("read %d workloads, %d sidecarsets, %d clusters, %d apiservices; want the StatefulSet and one of each",
			len(s.Workloads), len(s.SidecarSets), len(s.Clusters), len(s.APIServices))
	}
	if !s.Installed[GroupKruise] || !s.Installed[GroupClusterAPI] {
		t.Errorf("installed = %v", s.Installed)
	}
}
