package knowledge

import "strings"

// FieldManagerKind says what kind of writer a managedFields manager name stands for, so a check
// can tell who added a finalizer it has no table row for.
//
// A manager name is the client's choice: the request's fieldManager, or else the first word of
// its User-Agent, which client-go sets to the program's file name. So it names a binary
// ("manager" for most kubebuilder projects, "kopf" for Python operators), never a Deployment;
// a workload named like it may or may not be the writer, and none named like it proves nothing.
type FieldManagerKind string

// Kinds of field managers.
const (
	// ManagerController is any other manager: possibly a controller named after its binary.
	ManagerController FieldManagerKind = "controller"
	// ManagerGeneric is a name that many controllers share (the default binary name of a
	// framework): it does not tell one controller from another.
	ManagerGeneric FieldManagerKind = "generic"
	// ManagerControlPlane is a Kubernetes component (kube-apiserver, kube-controller-manager,
	// ...), which most clusters do not run as a Deployment.
	ManagerControlPlane FieldManagerKind = "control-plane"
	// ManagerClient is a command a person or a script ran (kubectl, helm): it names no
	// controller that acts on what it set.
	ManagerClient FieldManagerKind = "client"
)

// controlPlaneManagers are the field manager names the Kubernetes components write with.
var controlPlaneManagers = []string{
	"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "cloud-controller-manager",
}

// genericManagers are binary names frameworks give every controller built with them: kubebuilder
// and operator-sdk build "manager", kopf writes as "kopf", and Go and Python clients that set no
// User-Agent send their library's.
var genericManagers = []string{"manager", "controller", "operator", "main", "kopf", "Go-http-client", "OpenAPI-Generator"}

// clientManagerPrefixes are the prefixes of the field managers of client tools: kubectl uses
// "kubectl", "kubectl-client-side-apply", "kubectl-edit", "kubectl-patch", ...; Helm uses "helm".
var clientManagerPrefixes = []string{"kubectl", "helm", "k9s"}

// ClassifyFieldManager says what kind of writer a field manager name stands for.
func ClassifyFieldManager(name string) FieldManagerKind {
	for _, m := range controlPlaneManagers {
		if name == m {
			return ManagerControlPlane
		}
	}
	for _, p := range clientManagerPrefixes {
		if name == p || strings.HasPrefix(name, p+"-") {
			return ManagerClient
		}
	}
	for _, g := range genericManagers {
		if name == g {
			return ManagerGeneric
		}
	}
	return ManagerController
}
