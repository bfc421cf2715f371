package knowledge

import (
	"strings"
	"testing"
)

// Field managers name the writer's binary (the apiserver falls back to the User-Agent's first
// word, managerOrUserAgent in k8s.io/apiserver/pkg/endpoints/handlers/create.go; client-go sends the
// program's file name, DefaultKubernetesUserAgent in k8s.io/client-go/rest/config.go).
func TestClassifyFieldManager(t *testing.T) {
	for name, want := range map[string]FieldManagerKind{
		"kube-controller-manager":   ManagerControlPlane,
		"kubectl-client-side-apply": ManagerClient,
		"kubectl-edit":              ManagerClient,
		"helm":                      ManagerClient,
		"manager":                   ManagerGeneric, // kubebuilder's binary
		"kopf":                      ManagerGeneric,
		"Go-http-client":            ManagerGeneric,
		"widget-operator":           ManagerController,
		"kubectlish":                ManagerController,
	} {
		if got := ClassifyFieldManager(name); got != want {
			t.Errorf("ClassifyFieldManager(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestFinalizerOwnersRunAsTheirInstallsDo(t *testing.T) {
	argo, ok := LookupFinalizer("resources-finalizer.argocd.argoproj.io/background")
	if !ok || len(argo.Workloads) != 1 || argo.Workloads[0] != (Workload{KindStatefulSet, "argocd", "argocd-application-controller"}) {
		t.Errorf("Argo CD row = %+v, want the application controller StatefulSet", argo)
	}
	if got := strings.Join(OwnerNamespaces(), ","); got != "argocd,capi-system,flux-system,kube-system" {
		t.Errorf("OwnerNamespaces = %s", got)
	}
}

// The re-add race is the controllers' from v1.9.0 on (kubernetes-sigs/cluster-api#11286) and is
// fixed in clusterctl, not in them (#11814, #11821): no controller version is "fixed".
func TestClusterAPIReaddRow(t *testing.T) {
	b, ok := LookupBug(BugCAPIFinalizerReadd)
	if !ok || b.Affected.From != "v1.9.0" || b.Affected.Fixed != "" || !strings.Contains(b.FixedIn, "clusterctl v1.9.5 and v1.10.0") {
		t.Fatalf("row = %+v", b)
	}
	for v, want := range map[string]bool{"v1.8.9": false, "v1.9.0": true, "v1.9.5": true, "v1.10.0": true, "v1.11.1": true} {
		if got := b.Affected.Contains(mustVersion(v)); got != want {
			t.Errorf("controllers %s can re-add = %v, want %v", v, got, want)
		}
	}
}
