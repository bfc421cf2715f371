package testcluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// These tests need no Kubernetes binaries (restart_test.go runs a control plane from bin/tools);
// the rest of the harness is exercised by test/e2e.

func TestRepoRootAndToolsDir(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if mod, err := modulePath(filepath.Join(root, "go.mod")); err != nil || mod != ModulePath {
		t.Fatalf("RepoRoot() = %s with module %q (%v), want %s", root, mod, err, ModulePath)
	}
	t.Setenv(ToolsDirEnv, "")
	if dir, err := ToolsDir(); err != nil || dir != filepath.Join(root, "bin", "tools") {
		t.Errorf("ToolsDir() = %q, %v; want <root>/bin/tools", dir, err)
	}
	override := t.TempDir()
	t.Setenv(ToolsDirEnv, override)
	if dir, err := ToolsDir(); err != nil || dir != override {
		t.Errorf("ToolsDir() with %s set = %q, %v; want %q", ToolsDirEnv, dir, err, override)
	}
}

func TestCertificatesChainToTheCA(t *testing.T) {
	ca, err := newCA()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)

	certPEM, _, err := ca.issue("alice", []string{"devs", "ops"}, false)
	if err != nil {
		t.Fatal(err)
	}
	client := parseCert(t, certPEM)
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client cert does not verify: %v", err)
	}
	// The groups' order is not kept (DER sorts a SET), and the apiserver does not care.
	if orgs := slices.Sorted(slices.Values(client.Subject.Organization)); client.Subject.CommonName != "alice" || !slices.Equal(orgs, []string{"devs", "ops"}) {
		t.Errorf("client subject = %v, want CN=alice O=devs,ops", client.Subject)
	}

	certPEM, _, err = ca.issue("kube-apiserver", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	serving := parseCert(t, certPEM)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("serving cert does not verify for %s: %v", host, err)
		}
	}
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestCRDFiles(t *testing.T) {
	dir, err := CRDDir()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := CRDFiles("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kruiseFiles, err := KruiseCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range kruiseFiles {
		if !strings.HasPrefix(filepath.Base(path), "apps.kruise.io_") {
			t.Errorf("KruiseCRDFiles() has %s", path)
		}
	}
	if len(kruiseFiles) != 4 {
		t.Errorf("KruiseCRDFiles() = %v, want the 4 apps.kruise.io CRDs", kruiseFiles)
	}
	want := map[string]string{ // name -> scope
		"clonesets.apps.kruise.io":    "Namespaced",
		"statefulsets.apps.kruise.io": "Namespaced",
		"daemonsets.apps.kruise.io":   "Namespaced",
		"sidecarsets.apps.kruise.io":  "Cluster",
		"clusters.cluster.x-k8s.io":   "Namespaced",
		"machines.cluster.x-k8s.io":   "Namespaced",
	}
	got := map[string]bool{}
	for _, path := range paths {
		objs, err := readObjects(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range objs {
			name := crd.GetName()
			got[name] = true
			if scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope"); scope != want[name] {
				t.Errorf("%s: scope %q, want %q", name, scope, want[name])
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			storage := 0
			for _, v := range versions {
				vm := v.(map[string]any)
				if s, _, _ := unstructured.NestedBool(vm, "storage"); s {
					storage++
				}
				if _, ok, _ := unstructured.NestedMap(vm, "subresources", "status"); !ok {
					t.Errorf("%s %v: no status subresource", name, vm["name"])
				}
				for _, field := range []string{"spec", "status"} {
					if p, _, _ := unstructured.NestedBool(vm, "schema", "openAPIV3Schema", "properties", field, "x-kubernetes-preserve-unknown-fields"); !p {
						t.Errorf("%s %v: %s does not preserve unknown fields", name, vm["name"], field)
					}
				}
			}
			if storage != 1 {
				t.Errorf("%s: %d storage versions, want 1", name, storage)
			}
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("no CRD %s in %s", name, dir)
		}
	}
}

func TestLeakedProcesses(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	if got := LeakedProcesses([]int{cmd.Process.Pid}); len(got) != 0 {
		t.Errorf("LeakedProcesses(reaped child) = %v, want none", got)
	}
	if got := LeakedProcesses([]int{os.Getpid()}); len(got) != 1 {
		t.Errorf("LeakedProcesses(self) = %v, want one entry", got)
	}
}
