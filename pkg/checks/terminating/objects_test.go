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
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestStuckTerminatingObjects(t *testing.T) {
	readd := "Machine.cluster.x-k8s.io \"m-2\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"machine.cluster.x-k8s.io/pre-drain\"}"
	cases := []struct {
		name  string
		world func() checktest.Cluster
		want  want
	}{
		{name: "custom resource whose finalizer's manager has no Deployment",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerMissing,
				summary:  []string{"Deleting for 20m", "example.com/protect"},
				evidence: []string{"deletionTimestamp", "finalizer example.com/protect: added by field manager widget-operator (metadata.managedFields; not in the known-finalizer table); no Deployment named widget-operator or running a container named so"},
				fixes:    []string{checks.ActionRemoveFinalizer + ":example.com/protect"}, risks: []report.Risk{report.RiskMedium}}},
		{name: "Deployments Unread: the owner is not claimed missing",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
					Unread: map[snapshot.Input]error{snapshot.InputControllers: errors.New("forbidden: list apps/deployments in all namespaces")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"Deployments were not (all) read"},
				message: []string{"could not be checked"}}},
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
		{name: "finalizer set by kubectl: no controller owns it",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "kubectl-edit", "example.com/protect")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerMissing, evidence: []string{"kubectl-edit is a client command, not a controller"},
				fixes: []string{checks.ActionRemoveFinalizer + ":example.com/protect"}}},
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
		{name: "known finalizer: owner found by image repository",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(argoAppsGVR, "Application", "argocd", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")},
					Deployments: []*appsv1.Deployment{checktest.Deployment("gitops", "argocd-repo-server", "repo-server", "quay.io/argoproj/argocd:v2.13.1", 1, 1)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"Argo CD application controller (known-finalizer table)", "Deployment gitops/argocd-repo-server: 1/1 available"}}},
		{name: "known finalizer: owner not installed",
			world: func() checktest.Cluster {
				return checktest.Cluster{Objects: []snapshot.Object{deletedObject(argoAppsGVR, "Application", "argocd", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerMissing,
				evidence: []string{"no Deployment argocd/argocd-application-controller, no Deployment running image argocd", "no Deployment named argocd-server"},
				fixes:    []string{checks.ActionRemoveFinalizer + ":resources-finalizer.argocd.argoproj.io"}}},
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
				evidence: []string{"no Deployment capi-system/capi-controller-manager", "no Deployment named manager"},
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
				evidence: []string{"Cluster API v1.9.4 (Deployment capi-system/capi-controller-manager) is in the range of kubernetes-sigs/cluster-api#11812"},
				message:  []string{"upgrade to v1.9.5"}}},
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
