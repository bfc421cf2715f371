package knowledge

import (
	"sort"
	"strings"
)

// FinalizerOwner says who removes a finalizer and where that controller usually runs.
type FinalizerOwner struct {
	// Match is the finalizer name, or a prefix when it ends in "/" or "*".
	Match string
	// Owner names the controller that removes the finalizer.
	Owner string
	// BuiltIn marks finalizers removed by kube-controller-manager or the apiserver, which are
	// not visible as Deployments in most clusters.
	BuiltIn bool
	// Workloads are where the owner runs in a default install.
	Workloads []Workload
	// ImageRepository finds the owner's workload anywhere by image ("kwok"), among workloads of
	// the kinds in Workloads.
	ImageRepository string
	// Cleanup says what is skipped when the finalizer is removed by hand.
	Cleanup string
}

// Workload kinds a controller runs as.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
)

// Workload is a Deployment, StatefulSet or DaemonSet by kind, namespace and name.
type Workload struct{ Kind, Namespace, Name string }

func (w Workload) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

func deployment(ns, name string) Workload { return Workload{KindDeployment, ns, name} }

var capiManager = []Workload{deployment("capi-system", "capi-controller-manager")}

var finalizerOwners = []FinalizerOwner{
	{Match: "kubernetes", Owner: "namespace controller (kube-controller-manager)", BuiltIn: true,
		Cleanup: "deletion of the namespace's remaining content"},
	{Match: "foregroundDeletion", Owner: "garbage collector (kube-controller-manager)", BuiltIn: true,
		Cleanup: "deletion of dependents before the owner"},
	{Match: "orphan", Owner: "garbage collector (kube-controller-manager)", BuiltIn: true,
		Cleanup: "orphaning of dependents"},
	{Match: "batch.kubernetes.io/job-tracking", Owner: "Job controller (kube-controller-manager)", BuiltIn: true,
		Cleanup: "the Job's accounting of this pod's completion"},
	{Match: "kubernetes.io/pvc-protection", Owner: "PVC protection controller (kube-controller-manager)", BuiltIn: true,
		Cleanup: "protection of a claim still mounted by a pod"},
	{Match: "kubernetes.io/pv-protection", Owner: "PV protection controller (kube-controller-manager)", BuiltIn: true,
		Cleanup: "protection of a volume still bound to a claim"},
	{Match: "customresourcecleanup.apiextensions.k8s.io", Owner: "CRD finalizer (kube-apiserver)", BuiltIn: true,
		Cleanup: "deletion of every custom resource of the definition"},
	{Match: "service.kubernetes.io/load-balancer-cleanup", Owner: "service controller (cloud-controller-manager)", BuiltIn: true,
		Cleanup: "deletion of the cloud load balancer"},
	{Match: "kwok.x-k8s.io/fake", Owner: "kwok controller", Workloads: []Workload{deployment("kube-system", "kwok-controller")},
		ImageRepository: "kwok", Cleanup: "nothing: the pod is simulated"},
	{Match: "cluster.cluster.x-k8s.io", Owner: "Cluster API controller", Workloads: capiManager,
		ImageRepository: "cluster-api-controller", Cleanup: "deletion of the cluster's machines and infrastructure"},
	{Match: "machine.cluster.x-k8s.io", Owner: "Cluster API controller", Workloads: capiManager,
		ImageRepository: "cluster-api-controller", Cleanup: "drain and deletion of the machine's node and infrastructure"},
	{Match: "machineset.cluster.x-k8s.io", Owner: "Cluster API controller", Workloads: capiManager,
		ImageRepository: "cluster-api-controller", Cleanup: "deletion of the set's machines"},
	{Match: "machinedeployment.cluster.x-k8s.io", Owner: "Cluster API controller", Workloads: capiManager,
		ImageRepository: "cluster-api-controller", Cleanup: "deletion of the deployment's machine sets"},
	// Argo CD's install manifests (manifests/install.yaml and the HA ones) run the application
	// controller as a StatefulSet; its other components are Deployments of the same image.
	{Match: "resources-finalizer.argocd.argoproj.io*", Owner: "Argo CD application controller",
		Workloads: []Workload{{KindStatefulSet, "argocd", "argocd-application-controller"}}, ImageRepository: "argocd",
		Cleanup: "deletion of the application's managed resources"},
	{Match: "finalizers.fluxcd.io", Owner: "Flux controllers", Workloads: []Workload{deployment("flux-system", "kustomize-controller"), deployment("flux-system", "helm-controller")},
		Cleanup: "garbage collection of the reconciled resources"},
	{Match: "external-attacher/", Owner: "CSI external-attacher", Cleanup: "detaching the volume"},
	{Match: "external-provisioner.volume.kubernetes.io/finalizer", Owner: "CSI external-provisioner",
		Cleanup: "deletion of the backing volume"},
}

// LookupFinalizer returns the known owner of a finalizer.
func LookupFinalizer(name string) (FinalizerOwner, bool) {
	for _, o := range finalizerOwners {
		switch {
		case strings.HasSuffix(o.Match, "*") && strings.HasPrefix(name, strings.TrimSuffix(o.Match, "*")):
			return o, true
		case strings.HasSuffix(o.Match, "/") && strings.HasPrefix(name, o.Match):
			return o, true
		case o.Match == name:
			return o, true
		}
	}
	return FinalizerOwner{}, false
}

// OwnerNamespaces are the namespaces the known owners run in by default, sorted.
func OwnerNamespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range finalizerOwners {
		for _, w := range o.Workloads {
			if !seen[w.Namespace] {
				seen[w.Namespace] = true
				out = append(out, w.Namespace)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Where the Cluster API core controller runs and how it elects its leader (its main.go:
// LeaderElectionID "controller-leader-election-capi", in the manager's namespace; container
// "manager" in config/manager/manager.yaml).
var (
	ClusterAPIManager     = capiManager[0]
	ClusterAPIImage       = "cluster-api-controller"
	ClusterAPILeaderLease = "controller-leader-election-capi"
	ClusterAPIContainer   = "manager"
)

// FinalizerReaddMessage is the apiserver's refusal of an update that adds a finalizer to an
// object being deleted (ValidateNoNewFinalizers, k8s.io/apimachinery/pkg/api/validation/objectmeta.go).
const FinalizerReaddMessage = "no new finalizers can be added if the object is being deleted"
