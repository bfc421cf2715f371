package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// crdGVR is the CustomResourceDefinition resource; CRDs go through the dynamic client so the plugin's
// module needs no dependency on k8s.io/apiextensions-apiserver.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdTimeout bounds the wait for one batch of CRDs to be established and discoverable.
const crdTimeout = 30 * time.Second

// CRDDir is <repo root>/test/testdata/crds, the project's minimal OpenKruise and Cluster API CRDs.
func CRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "test", "testdata", "crds"), nil
}

// CRDFiles returns the files of CRDDir whose names match pattern (filepath.Match syntax), failing
// when none does.
func CRDFiles(pattern string) ([]string, error) {
	dir, err := CRDDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no %s in %s (err: %v)", pattern, dir, err)
	}
	return paths, nil
}

// KruiseCRDFiles returns the project's OpenKruise CRD files (CRDDir/apps.kruise.io_*.yaml).
func KruiseCRDFiles() ([]string, error) { return CRDFiles("apps.kruise.io_*.yaml") }

// InstallCRDs creates the CRDs in the given YAML files (several documents per file are fine), or
// every *.yaml in CRDDir when no path is given, and waits until each is Established and its
// resource is served through discovery. CRDs that already exist are left as they are.
func (c *Cluster) InstallCRDs(t testing.TB, paths ...string) {
	t.Helper()
	if len(paths) == 0 {
		var err error
		if paths, err = CRDFiles("*.yaml"); err != nil {
			t.Fatalf("install CRDs: %v", err)
		}
	}
	if err := c.InstallCRDFiles(t.Context(), paths...); err != nil {
		t.Fatal(err)
	}
}

// InstallCRDFiles is InstallCRDs for callers outside a test: it creates the CRDs in the given
// files and waits (at most crdTimeout) until each is served.
func (c *Cluster) InstallCRDFiles(ctx context.Context, paths ...string) error {
	ctx, cancel := context.WithTimeout(ctx, crdTimeout)
	defer cancel()
	var crds []*unstructured.Unstructured
	for _, path := range paths {
		objs, err := readObjects(path)
		if err != nil {
			return fmt.Errorf("install CRDs: %w", err)
		}
		for _, obj := range objs {
			_, err := c.dynamic.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("install CRDs: create %s from %s: %w", obj.GetName(), path, err)
			}
			crds = append(crds, obj)
		}
	}
	for _, crd := range crds {
		if err := c.waitCRDServed(ctx, crd); err != nil {
			return fmt.Errorf("install CRDs: %w", err)
		}
	}
	return nil
}

// readObjects decodes every non-empty YAML or JSON document of a file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// waitCRDServed waits for the Established condition and for discovery to list the plural under
// every served version: Established alone does not mean clients can already resolve the resource.
func (c *Cluster) waitCRDServed(ctx context.Context, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var served []string
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if ok, _, _ := unstructured.NestedBool(vm, "served"); ok {
			name, _, _ := unstructured.NestedString(vm, "name")
			served = append(served, name)
		}
	}
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		live, err := c.dynamic.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		if !established(live) {
			last = errors.New("not Established yet")
			return false, nil
		}
		for _, v := range served {
			list, err := c.clientset.Discovery().ServerResourcesForGroupVersion(group + "/" + v)
			if err != nil {
				last = fmt.Errorf("discovery %s/%s: %w", group, v, err)
				return false, nil
			}
			if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
				last = fmt.Errorf("discovery %s/%s does not list %s yet", group, v, plural)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("wait for CRD %s: %w (last: %v)", crd.GetName(), err, last)
	}
	return nil
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == "Established" && cm["status"] == "True" {
			return true
		}
	}
	return false
}
