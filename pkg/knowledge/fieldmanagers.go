package knowledge

import "strings"

// FieldManagerKind says what kind of writer a managedFields manager name stands for, so a check
// can tell who added a finalizer it has no table row for.
type FieldManagerKind string

// Kinds of field managers.
const (
	// ManagerController is any other manager: a controller, found by its Deployment.
	ManagerController FieldManagerKind = "controller"
	// ManagerControlPlane is a Kubernetes component (kube-apiserver, kube-controller-manager,
	// ...), which most clusters do not run as a Deployment.
	ManagerControlPlane FieldManagerKind = "control-plane"
	// ManagerClient is a command a person ran (kubectl, helm): no controller watches what it set.
	ManagerClient FieldManagerKind = "client"
)

// controlPlaneManagers are the field manager names the Kubernetes components write with.
var controlPlaneManagers = []string{
	"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "cloud-controller-manager",
}

// clientManagerPrefixes are the prefixes of the field managers of client tools: kubectl uses
// "kubectl", "kubectl-client-side-apply", "kubectl-edit", "kubectl-patch", ...; Helm uses "helm".
var clientManagerPrefixes = []string{"kubectl", "helm"}

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
	return ManagerController
}
