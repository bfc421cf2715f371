package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// installLooseCRD installs a namespaced CRD of group, version v1, whose objects take any field:
// a resource the cluster's own controllers know nothing about.
func installLooseCRD(t *testing.T, c *testcluster.Cluster, group, kind, plural string) {
	t.Helper()
	installCRD(t, c, group, kind, plural, `  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`)
}

// installCRD installs a namespaced CRD of group whose spec goes on with rest (YAML indented
// under spec: its versions, its conversion) and waits until it is served.
func installCRD(t *testing.T, c *testcluster.Cluster, group, kind, plural, rest string) {
	t.Helper()
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[3]s.%[1]s
spec:
  group: %[1]s
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[3]s, singular: %[4]s}
  scope: Namespaced
`, group, kind, plural, strings.ToLower(kind)) + rest
	path := filepath.Join(t.TempDir(), plural+".yaml")
	if err := os.WriteFile(path, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	c.InstallCRDs(t, path)
}
