package why

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args       []string
		typ, name  string
		wantErrMsg string
	}{
		{args: []string{"pod/web-0"}, typ: "pod", name: "web-0"},
		{args: []string{"deploy", "web"}, typ: "deploy", name: "web"},
		{args: []string{"cloneset.apps.kruise.io/cart"}, typ: "cloneset.apps.kruise.io", name: "cart"},
		{args: []string{"pod"}, wantErrMsg: `want TYPE/NAME or TYPE NAME, got "pod"`},
		{args: []string{"pod/"}, wantErrMsg: "want TYPE/NAME"},
		{args: []string{"pod/web", "x"}, wantErrMsg: "want TYPE/NAME"},
		{args: []string{"a", "b", "c"}, wantErrMsg: "got 3 arguments"},
	} {
		typ, name, err := ParseArgs(c.args)
		if c.wantErrMsg != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErrMsg) {
				t.Errorf("ParseArgs(%q): error %v, want %q", c.args, err, c.wantErrMsg)
			}
			continue
		}
		if err != nil || typ != c.typ || name != c.name {
			t.Errorf("ParseArgs(%q) = %q, %q, %v; want %q, %q", c.args, typ, name, err, c.typ, c.name)
		}
	}
}

// mapper is a RESTMapper as discovery fills it for a few kinds; the short names of the real one
// come from discovery too and are exercised end to end.
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Node"}, meta.RESTScopeRoot)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return m
}

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		typ, name, ns string
		want          Target
		scope         string
	}{
		{"pods", "web-0", "shop", Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true, Namespace: "shop", Name: "web-0"}, "shop"},
		{"Deployment", "web", "shop", Target{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true, Namespace: "shop", Name: "web"}, "shop"},
		{"deployment.apps", "web", "shop", Target{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true, Namespace: "shop", Name: "web"}, "shop"},
		// A namespace is diagnosed on the scan of itself, whatever -n says.
		{"namespace", "shop", "default", Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace", Name: "shop"}, "shop"},
		// A cluster-scoped object drops -n: its scope comes from the object (clusterScope).
		{"node", "kw-1", "shop", Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node", Name: "kw-1"}, ""},
	} {
		got, err := Resolve(mapper(), c.typ, c.name, c.ns)
		if err != nil || got != c.want || got.scopeNamespace() != c.scope {
			t.Errorf("Resolve(%q, %q, %q) = %+v, %v (scope %q); want %+v (scope %q)", c.typ, c.name, c.ns, got, err, got.scopeNamespace(), c.want, c.scope)
		}
	}
	for typ, want := range map[string]string{
		"frobnicate": `the server doesn't have a resource type "frobnicate"`,
	} {
		if _, err := Resolve(mapper(), typ, "kw-1", "shop"); err == nil || err.Error() != want {
			t.Errorf("Resolve(%q): error %v, want %q", typ, err, want)
		}
	}
}
