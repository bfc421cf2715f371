package terminating

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestStuckTerminatingObjects(t *testing.T) {
	readd := "Machine.cluster.x-k8s.io \"m-2\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"machine.cluster.x-k8s.io/pre-drain\"}"
	cases := []struct {
		name  string
		world func() checktest.Cluster
		want  want
	}{
		// The field manager is the writer's binary name (managerOrUserAgent and prefixFromUserAgent,
		// k8s.io/apiserver/pkg/endpoints/handlers/create.go), not a workload's: finding no workload so
		// named is no evidence that the owner is gone, so no finalizer is offered for removal.
		{name: "unknown finalizer whose field manager names no workload: owner not found, no fix",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing,
				summary: []string{"Deleting for 20m", "example.com/protect", "its owner was not found"},
				evidence: []string{"deletionTimestamp", "finalizer example.com/protect: not in the known-finalizer table; added by field manager widget-operator (metadata.managedFields); " +
					"no workload named widget-operator or with a container so named among the Deployments, StatefulSets and DaemonSets of all namespaces"},
				message: []string{"may run under another name"}}},
		{name: "controllers Unread: the owner is not claimed missing",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
					Unread: map[snapshot.Input]error{snapshot.InputControllers: errors.New("forbidden: list apps/deployments in all namespaces")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"among the workloads that could be read (forbidden: list apps/deployments in all namespaces)"},
				message: []string{"was not found"}}},
		{name: "near miss: owner Deployment named like the manager runs",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
					Deployments: []*appsv1.Deployment{checktest.Deployment("widgets", "widget-operator", "manager", "acme/widget-operator:1.0", 1, 1)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"Deployment widgets/widget-operator: 1/1 available"}}},
		{name: "owner found by container name, scaled to zero",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
					Deployments: []*appsv1.Deployment{checktest.Deployment("acme-system", "acme-controller-manager", "widget-operator", "acme/ops:1.0", 0, 0)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"Deployment acme-system/acme-controller-manager: 0/0 available"},
				message: []string{"has no available replica"}}},
		// kubectl apply of a manifest that lists the finalizer records kubectl-client-side-apply
		// (kubectl's apply: its fieldManager default "kubectl-client-side-apply"); the controller
		// that acts on it is not named by that.
		{name: "finalizer set by kubectl apply: owner unknown, no fix",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "kubectl-client-side-apply", "example.com/protect")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"kubectl-client-side-apply is a client command a person or a script ran, which names no controller"}}},
		// kubebuilder scaffolds build a binary named "manager" (its Dockerfile: go build -o manager
		// cmd/main.go), and kopf writes as "kopf": names many controllers share. A Deployment whose
		// container is named "manager" is not therefore the owner, and none is no proof either.
		{name: "finalizer added by field manager manager, a kubebuilder Deployment of another project runs: owner not found, no fix",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "manager", "widgets.example.com/cleanup")},
					Deployments: []*appsv1.Deployment{checktest.Deployment("cert-manager", "cert-manager", "manager", "quay.io/jetstack/cert-manager-controller:v1.16.0", 1, 1)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"manager is the default binary name of many controllers, which names none of them"},
				noEvid: []string{"cert-manager"}}},
		{name: "finalizer added by kopf: owner not found, no fix",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "kopf", "kopf.zalando.org/KopfFinalizerMarker")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"kopf is the default binary name"}}},
		{name: "unknown finalizer set by kube-controller-manager: built in",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "kube-controller-manager", "example.com/protect")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"kube-controller-manager is a control-plane component"}}},
		{name: "no table row and no manager: owner unknown",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "", "example.com/protect")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"managedFields name no manager"}}},
		{name: "foreground deletion waits for the garbage collector",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(deploymentsGVR, "Deployment", "shop", "target", 20*time.Minute, "kube-apiserver", "foregroundDeletion")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"garbage collector (kube-controller-manager)", "built into the control plane"}}},
		// Argo CD's manifests/install.yaml runs argocd-application-controller as a StatefulSet (the
		// other components are Deployments of the same image).
		{name: "near miss: Argo CD's application controller StatefulSet runs",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(argoAppsGVR, "Application", "argocd", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")},
					Deployments:  []*appsv1.Deployment{checktest.Deployment("argocd", "argocd-server", "argocd-server", "quay.io/argoproj/argocd:v2.13.1", 1, 1)},
					StatefulSets: []*appsv1.StatefulSet{checktest.StatefulSet("argocd", "argocd-application-controller", "argocd-application-controller", "quay.io/argoproj/argocd:v2.13.1", 1, 1)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"Argo CD application controller (known-finalizer table)",
				"StatefulSet argocd/argocd-application-controller: 1/1 available"}, message: []string{"runs but has not removed it"}}},
		{name: "known finalizer: owner found by image in another namespace",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(argoAppsGVR, "Application", "gitops", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")},
					Deployments:  []*appsv1.Deployment{checktest.Deployment("gitops", "argocd-repo-server", "repo-server", "quay.io/argoproj/argocd:v2.13.1", 1, 1)},
					StatefulSets: []*appsv1.StatefulSet{checktest.StatefulSet("gitops", "gitops-app-controller", "application-controller", "mirror.example/argocd:v2.13.1", 1, 0)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"StatefulSet gitops/gitops-app-controller: 0/1 available"},
				noEvid: []string{"argocd-repo-server"}, message: []string{"has no available replica"}}},
		// Positive evidence: a known owner, every namespace listed, none of its workloads there.
		{name: "known finalizer: owner not installed, every namespace listed",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(argoAppsGVR, "Application", "argocd", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")},
					Deployments: []*appsv1.Deployment{checktest.Deployment("gitops", "argocd-repo-server", "repo-server", "quay.io/argoproj/argocd:v2.13.1", 1, 1)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerMissing,
				evidence: []string{"not installed: no StatefulSet argocd/argocd-application-controller, no StatefulSet running image argocd among the Deployments, StatefulSets and DaemonSets of all namespaces (listed in full)"},
				message:  []string{"its owner is not installed", "listed in full"},
				fixes:    []string{checks.ActionRemoveFinalizer + ":resources-finalizer.argocd.argoproj.io"}}},
		{name: "known finalizer absent from the namespaces searched, cluster-wide list refused: no owner-missing",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(argoAppsGVR, "Application", "argocd", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")},
					ControllerNamespaces: []string{"kruise-system", "kube-system", "argocd"}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing,
				evidence: []string{"no StatefulSet argocd/argocd-application-controller, no StatefulSet running image argocd among the Deployments, StatefulSets and DaemonSets of namespaces kruise-system, kube-system, argocd only (the cluster-wide lists were refused), so whether it is installed elsewhere is unknown"}}},
		{name: "near miss: object without finalizers",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "")}}
			}},
		{name: "near miss: object deleted 1s ago",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", time.Second, "widget-operator", "example.com/protect")}}
			}},
		{name: "Machine of a Cluster paused by an interrupted clusterctl move",
			world: func() checktest.Cluster {
				m := machine("target", "prod", 30*time.Minute)
				m.Meta.Annotations = map[string]string{"clusterctl.cluster.x-k8s.io/delete-for-move": ""}
				return checktest.Cluster{Objects: []snapshot.Object{m}, Clusters: []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", true)}}
			},
			want: want{rootCause: RootCauseOwnerPaused, summary: []string{"Cluster fleet/prod is paused"},
				evidence: []string{"Cluster fleet/prod: spec.paused=true", "clusterctl.cluster.x-k8s.io/delete-for-move", "finalizer machine.cluster.x-k8s.io: owner Cluster API controller"},
				message:  []string{"interrupted clusterctl move"}}},
		{name: "Machine paused by its own annotation",
			world: func() checktest.Cluster {
				m := machine("target", "prod", 30*time.Minute)
				m.Meta.Annotations = map[string]string{"cluster.x-k8s.io/paused": ""}
				return checktest.Cluster{Objects: []snapshot.Object{m}, Clusters: []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", false)}}
			},
			want: want{rootCause: RootCauseOwnerPaused, evidence: []string{"Machine fleet/target: annotation cluster.x-k8s.io/paused"}, message: []string{"unpause it"}}},
		{name: "Machine whose owning MachineSet is paused",
			world: func() checktest.Cluster {
				ms := deletedObject(machineSetsGVR, "MachineSet", "fleet", "prod-md-0-7bqx", 30*time.Minute, "manager", "machineset.cluster.x-k8s.io")
				ms.Meta.Annotations = map[string]string{"cluster.x-k8s.io/paused": ""}
				m := deletedObject(machinesGVR, "Machine", "fleet", "target", 30*time.Minute, "manager", "machine.cluster.x-k8s.io")
				checktest.OwnedBy("cluster.x-k8s.io/v1beta1", "MachineSet", ms.Meta.Name, ms.Meta.UID)(m.Meta)
				return checktest.Cluster{Objects: []snapshot.Object{ms, m}}
			},
			want: want{rootCause: RootCauseOwnerPaused, evidence: []string{"MachineSet fleet/prod-md-0-7bqx: annotation cluster.x-k8s.io/paused"}}},
		{name: "paused Cluster being deleted",
			world: func() checktest.Cluster {
				o := deletedObject(clustersGVR, "Cluster", "fleet", "target", 30*time.Minute, "manager", "cluster.cluster.x-k8s.io")
				c := checktest.ClusterAPICluster("fleet", "target", true)
				c.SetUID(o.Meta.UID)
				return checktest.Cluster{Objects: []snapshot.Object{o}, Clusters: []*unstructured.Unstructured{c}}
			},
			want: want{rootCause: RootCauseOwnerPaused, evidence: []string{"Cluster fleet/target: spec.paused=true"}}},
		{name: "near miss: the Machine's Cluster is not paused",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{machine("target", "prod", 30*time.Minute)},
					Clusters: []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", false)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerMissing,
				evidence: []string{"not installed: no Deployment capi-system/capi-controller-manager, no Deployment running image cluster-api-controller among"},
				fixes:    []string{checks.ActionRemoveFinalizer + ":machine.cluster.x-k8s.io"}}},
		{name: "controller keeps re-adding a finalizer after deletion began",
			world: func() checktest.Cluster {
				m := machine("target", "prod", 30*time.Minute)
				return checktest.Cluster{Objects: []snapshot.Object{m}, Clusters: []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", false)},
					Events: []*corev1.Event{
						eventAbout(objectRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", readd, 7, time.Minute),
						eventAbout(objectRef(m), corev1.EventTypeWarning, "FailedUpdate", "machinehealthcheck-controller", readd, 2, 3*time.Minute),
					}}
			},
			want: want{rootCause: RootCauseFinalizerReaddRace, summary: []string{"9 refused"},
				evidence: []string{"7 Warning event(s) ReconcileError from machine-controller", "2 Warning event(s) FailedUpdate from machinehealthcheck-controller",
					"no new finalizers can be added"},
				refs:  []string{"kubernetes-sigs/cluster-api#11812"},
				fixes: []string{checks.ActionRemoveFinalizer + ":machine.cluster.x-k8s.io"}}},
		{name: "re-add race with an affected Cluster API version",
			world: func() checktest.Cluster {
				m := machine("target", "prod", 30*time.Minute)
				return checktest.Cluster{Objects: []snapshot.Object{m}, Clusters: []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", false)},
					Deployments: []*appsv1.Deployment{checktest.Deployment("capi-system", "capi-controller-manager", "manager",
						"registry.k8s.io/cluster-api/cluster-api-controller:v1.9.4", 1, 1)},
					Events: []*corev1.Event{eventAbout(objectRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", readd, 7, time.Minute)}}
			},
			want: want{rootCause: RootCauseFinalizerReaddRace,
				evidence: []string{"Cluster API v1.9.4 (Deployment capi-system/capi-controller-manager): controllers >= v1.9.0 can re-add finalizers during a clusterctl move (kubernetes-sigs/cluster-api#11286)"},
				message:  []string{"The fix is in clusterctl, not in the controllers: clusterctl v1.9.5 and v1.10.0", "does not record which clusterctl"}}},
		{name: "near miss: owner-paused wins over a re-add race",
			world: func() checktest.Cluster {
				m := machine("target", "prod", 30*time.Minute)
				return checktest.Cluster{Objects: []snapshot.Object{m}, Clusters: []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", true)},
					Events: []*corev1.Event{eventAbout(objectRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", readd, 7, time.Minute)}}
			},
			want: want{rootCause: RootCauseOwnerPaused}},
		{name: "near miss: an unrelated Warning event is no re-add race",
			world: func() checktest.Cluster {
				m := machine("target", "prod", 30*time.Minute)
				return checktest.Cluster{Objects: []snapshot.Object{m}, Clusters: []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", false)},
					Events: []*corev1.Event{eventAbout(objectRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", "failed to drain node", 7, time.Minute)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerMissing, evidence: []string{"failed to drain node"}, fixes: []string{checks.ActionRemoveFinalizer + ":machine.cluster.x-k8s.io"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := New().Run(c.world().Snapshot(), 5*time.Minute)
			expect(t, fs, "target", c.want)
		})
	}
}
