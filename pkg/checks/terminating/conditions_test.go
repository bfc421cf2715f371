package terminating

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Objects shaped as kube-controller-manager v1.37 and the apiextensions-apiserver leave them
// (docs/domain.md, "Built-in finalizers: what each controller waits for").

// withDeadNode adds node-b, NotReady since 20 minutes, whose kubelet stopped renewing its Lease.
func withDeadNode(c checktest.Cluster) checktest.Cluster {
	c.Nodes = append(c.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 20*time.Minute)))
	c.NodeLeases = append(c.NodeLeases, checktest.NodeLease("node-b", 21*time.Minute))
	return c
}

// claim is a PVC deleted dueAgo, held by kubernetes.io/pvc-protection.
func claim(name string, dueAgo time.Duration, opts ...checktest.Option) snapshot.Object {
	return checktest.Object(checktest.PVCs, "PersistentVolumeClaim", "shop", name,
		append([]checktest.Option{checktest.DeletedSince(dueAgo), checktest.Finalizers("kube-apiserver", finPVCProtection)}, opts...)...)
}

// deadPod is a pod of the claim deleted while its node died: the kubelet never confirms.
func deadPod(name string, opts ...checktest.Option) *corev1.Pod {
	return replicaSetPod(name, append([]checktest.Option{checktest.OnNode("node-b"), checktest.Deleted(18*time.Minute, 30)}, opts...)...)
}

func TestBuiltInFinalizerConditions(t *testing.T) {
	cases := []struct {
		name   string
		target string
		world  func() checktest.Cluster
		want   want
	}{
		{name: "pvc-protection: a Running pod on a healthy node uses the claim",
			world: func() checktest.Cluster {
				c := healthy()
				c.Pods = []*corev1.Pod{replicaSetPod("web-0", checktest.Claim("target"))}
				c.Objects = []snapshot.Object{claim("target", 20*time.Minute)}
				return c
			},
			want: want{rootCause: RootCauseProtectedResourceInUse,
				summary:  []string{"claim still used by pod shop/web-0 (Running on node node-a (node Ready))"},
				evidence: []string{"used by: pod shop/web-0, Running on node node-a", "PVC protection controller"},
				message:  []string{"protected, not stuck", "scale its workload down"}}},
		{name: "pvc-protection: the ephemeral volume's claim <pod>-<volume>", target: "web-0-scratch",
			world: func() checktest.Cluster {
				c := healthy()
				c.Pods = []*corev1.Pod{replicaSetPod("web-0", checktest.EphemeralVolume("scratch"))}
				c.Objects = []snapshot.Object{claim("web-0-scratch", 20*time.Minute)}
				return c
			},
			want: want{rootCause: RootCauseProtectedResourceInUse, summary: []string{"pod shop/web-0"}}},
		{name: "near miss: a Succeeded pod no longer holds the claim; the controller not finishing is not acting",
			world: func() checktest.Cluster {
				c := healthy()
				c.Pods = []*corev1.Pod{checktest.Pod("shop", "job-1", checktest.Claim("target"), checktest.Phase(corev1.PodSucceeded))}
				c.Objects = []snapshot.Object{claim("target", 20*time.Minute)}
				return c
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing}},
		{name: "pv-protection: the volume is bound to a claim that is not deleted",
			world: func() checktest.Cluster {
				pv := checktest.PersistentVolume("pv-1", "shop", "data", corev1.VolumeBound, checktest.DeletedSince(20*time.Minute))
				pv.Name = "target"
				return checktest.Cluster{PersistentVolumes: []*corev1.PersistentVolume{pv}, Objects: []snapshot.Object{checktest.PVObject(pv)}}
			},
			want: want{rootCause: RootCauseProtectedResourceInUse, summary: []string{"volume still bound to persistentvolumeclaim shop/data (not being deleted"},
				evidence: []string{"status.phase Bound, claimRef shop/data"}}},
		{name: "near miss: a Released volume is not held by its claim",
			world: func() checktest.Cluster {
				pv := checktest.PersistentVolume("target", "shop", "data", corev1.VolumeReleased, checktest.DeletedSince(20*time.Minute))
				return checktest.Cluster{PersistentVolumes: []*corev1.PersistentVolume{pv}, Objects: []snapshot.Object{checktest.PVObject(pv)}}
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing}},
		{name: "orphan: dependents still name the owner",
			world: func() checktest.Cluster {
				c := healthy()
				rs := checktest.Object(checktest.ReplicaSets, "ReplicaSet", "shop", "target", checktest.UID("uid-rs-web"),
					checktest.DeletedSince(20*time.Minute), checktest.Finalizers("", finOrphan))
				c.Pods = []*corev1.Pod{replicaSetPod("web-0")}
				c.Objects = []snapshot.Object{rs}
				return c
			},
			want: want{rootCause: RootCauseDependentsRemaining, summary: []string{"orphan waits for pod shop/web-0"}, message: []string{"orphan propagation"}}},
		{name: "near miss: foreground deletion whose dependents do not block it",
			world: func() checktest.Cluster {
				c := healthy()
				rs := checktest.Object(checktest.ReplicaSets, "ReplicaSet", "shop", "target", checktest.UID("uid-rs-web"),
					checktest.DeletedSince(20*time.Minute), checktest.Finalizers("", finForeground))
				c.Pods = []*corev1.Pod{replicaSetPod("web-0", checktest.DependentOf("apps/v1", "ReplicaSet", "target", "uid-rs-web", false))}
				c.Pods[0].OwnerReferences = c.Pods[0].OwnerReferences[1:]
				c.Objects = []snapshot.Object{rs}
				return c
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.target == "" {
				c.target = "target"
			}
			fs := New().Run(c.world().Snapshot(), 5*time.Minute)
			expect(t, fs, c.target, c.want)
		})
	}
}

// Healthy nearby states: a protection or foreground deletion still within the threshold is the
// controller at work, whatever holds it.
func TestBuiltInFinalizersWithinThresholdNoFinding(t *testing.T) {
	c := healthy()
	c.Pods = []*corev1.Pod{replicaSetPod("web-0", checktest.Claim("target"))}
	rs := checktest.Object(checktest.ReplicaSets, "ReplicaSet", "shop", "rs", checktest.UID("uid-rs-web"),
		checktest.DeletedSince(time.Minute), checktest.Finalizers("", finForeground))
	c.Objects = []snapshot.Object{claim("target", time.Minute), rs}
	if fs := New().Run(c.Snapshot(), 5*time.Minute); len(fs) != 0 {
		t.Errorf("findings = %v, want none", fs)
	}
}

// chain runs the check as a scan does, which links the chains, and returns the findings by
// object name.
func chain(t *testing.T, c checktest.Cluster) map[string]report.Finding {
	t.Helper()
	out := map[string]report.Finding{}
	fs, _ := checks.Run(c.Snapshot(), []checks.Check{New()}, 5*time.Minute)
	for _, f := range fs {
		out[f.Object.Name] = f
	}
	return out
}

func assertChain(t *testing.T, f report.Finding, root report.Finding, names ...string) {
	t.Helper()
	var got []string
	for _, b := range f.BlockedBy {
		got = append(got, b.Name)
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s blockedBy = %v, want %v", f.Object.Name, got, names)
	}
	if len(f.BlockedBy) > 0 && f.BlockedBy[len(f.BlockedBy)-1].FindingID != root.ID {
		t.Errorf("%s: root finding ID %s, want %s", f.Object.Name, f.BlockedBy[len(f.BlockedBy)-1].FindingID, root.ID)
	}
	if len(f.Fixes) != 0 {
		t.Errorf("%s above the root offers fixes %v", f.Object.Name, f.Fixes)
	}
	if len(names) > 1 && !strings.Contains(f.Summary, "root: pod shop/"+root.Object.Name+", "+root.Summary) {
		t.Errorf("%s summary %q does not name the root %q", f.Object.Name, f.Summary, root.Summary)
	}
}

func TestChainClaimAndVolumeHeldByPodOnDeadNode(t *testing.T) {
	c := withDeadNode(healthy())
	c.Pods = []*corev1.Pod{deadPod("web-0", checktest.Claim("data"))}
	pv := checktest.PersistentVolume("pv-data", "shop", "data", corev1.VolumeBound, checktest.DeletedSince(19*time.Minute))
	c.PersistentVolumes = []*corev1.PersistentVolume{pv}
	c.Objects = []snapshot.Object{claim("data", 19*time.Minute), checktest.PVObject(pv)}
	fs := chain(t, c)
	pod := fs["web-0"]
	if pod.RootCause.ID != RootCauseNodeNotReady || len(pod.Fixes) != 1 || pod.Fixes[0].Action != checks.ActionForceDelete || len(pod.BlockedBy) != 0 {
		t.Fatalf("root = %s %v blockedBy %v, want node-not-ready with force-delete", pod.RootCause.ID, pod.Fixes, pod.BlockedBy)
	}
	if fs["data"].RootCause.ID != RootCauseProtectedResourceInUse || fs["pv-data"].RootCause.ID != RootCauseProtectedResourceInUse {
		t.Fatalf("claim %s, volume %s: want protected-resource-in-use", fs["data"].RootCause.ID, fs["pv-data"].RootCause.ID)
	}
	assertChain(t, fs["data"], pod, "web-0")
	assertChain(t, fs["pv-data"], pod, "data", "web-0")
	if !strings.Contains(fs["data"].Summary, "claim still used by pod shop/web-0 (Terminating for 18m on node node-b, which stopped heartbeating)") {
		t.Errorf("claim summary %q does not say the node stopped heartbeating", fs["data"].Summary)
	}
}

func TestChainForegroundDeploymentReplicaSetPods(t *testing.T) {
	c := withDeadNode(healthy())
	dep := checktest.Object(checktest.Deployments, "Deployment", "shop", "web", checktest.UID("uid-dep-web"),
		checktest.DeletedSince(18*time.Minute), checktest.Finalizers("", finForeground))
	rs := checktest.Object(checktest.ReplicaSets, "ReplicaSet", "shop", "web-6d4cf56db6", checktest.UID("uid-rs-web"),
		checktest.DependentOf("apps/v1", "Deployment", "web", "uid-dep-web", true),
		checktest.DeletedSince(18*time.Minute), checktest.Finalizers("", finForeground))
	c.Pods = []*corev1.Pod{deadPod("web-0")}
	c.Objects = []snapshot.Object{dep, rs}
	fs := chain(t, c)
	pod := fs["web-0"]
	if pod.RootCause.ID != RootCauseNodeNotReady {
		t.Fatalf("root = %s, want node-not-ready", pod.RootCause.ID)
	}
	for _, n := range []string{"web", "web-6d4cf56db6"} {
		if fs[n].RootCause.ID != RootCauseDependentsRemaining {
			t.Errorf("%s: %s, want dependents-remaining", n, fs[n].RootCause.ID)
		}
	}
	assertChain(t, fs["web"], pod, "web-6d4cf56db6", "web-0")
	assertChain(t, fs["web-6d4cf56db6"], pod, "web-0")
}

func TestChainCRDHeldByInstance(t *testing.T) {
	crd := checktest.Object(checktest.CRDs, "CustomResourceDefinition", "", "widgets.example.com",
		checktest.DeletedSince(20*time.Minute), checktest.Finalizers("", finCRDCleanup))
	inst := deletedObject(widgetsGVR, "Widget", "shop", "w-1", 20*time.Minute, "widget-operator", "example.com/protect")
	fs := chain(t, checktest.Cluster{Objects: []snapshot.Object{crd, inst}})
	f := fs["widgets.example.com"]
	if f.RootCause.ID != RootCauseDependentsRemaining || !strings.Contains(f.Summary, "1 instance(s) of widgets.example.com remain: widget shop/w-1") {
		t.Fatalf("crd: %s %q", f.RootCause.ID, f.Summary)
	}
	if len(f.BlockedBy) != 1 || f.BlockedBy[0].Name != "w-1" || f.BlockedBy[0].FindingID != fs["w-1"].ID {
		t.Errorf("crd blockedBy = %v, want widget w-1 with its finding %s", f.BlockedBy, fs["w-1"].ID)
	}
	for _, fx := range f.Fixes {
		if fx.Params["finalizer"] == finCRDCleanup {
			t.Errorf("the CRD's cleanup finalizer is offered for removal: %v", fx)
		}
	}
}

func TestNamespaceLinksToStuckObjectInside(t *testing.T) {
	c := healthy()
	c.Namespaces = []*corev1.Namespace{checktest.Namespace("shop", checktest.DeletedSince(20*time.Minute),
		checktest.NamespaceCondition(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: widgets.example.com has 1 resource instances"))}
	c.Objects = []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "w-1", 20*time.Minute, "widget-operator", "example.com/protect")}
	c.NodeLeases = append(c.NodeLeases, []*coordinationv1.Lease{}...)
	fs := chain(t, c)
	ns := fs["shop"]
	if ns.RootCause.ID != RootCauseNamespaceContentRemaining || len(ns.BlockedBy) != 1 || ns.BlockedBy[0].FindingID != fs["w-1"].ID {
		t.Errorf("namespace %s blockedBy %v, want the widget's finding %s", ns.RootCause.ID, ns.BlockedBy, fs["w-1"].ID)
	}
}

// A foreground deletion whose pods are still in their grace period is the garbage collector at
// work: no finding for the Deployment or its ReplicaSet, however long ago they were deleted.
func TestForegroundDeletionProgressingNoFinding(t *testing.T) {
	c := healthy()
	dep := checktest.Object(checktest.Deployments, "Deployment", "shop", "web", checktest.UID("uid-dep-web"),
		checktest.DeletedSince(20*time.Minute), checktest.Finalizers("", finForeground))
	rs := checktest.Object(checktest.ReplicaSets, "ReplicaSet", "shop", "web-6d4cf56db6", checktest.UID("uid-rs-web"),
		checktest.DependentOf("apps/v1", "Deployment", "web", "uid-dep-web", true),
		checktest.DeletedSince(20*time.Minute), checktest.Finalizers("", finForeground))
	// Deleted with a 30-minute grace period: deletionTimestamp is 10 minutes ahead.
	c.Pods = []*corev1.Pod{replicaSetPod("web-0", checktest.Deleted(-10*time.Minute, 1800))}
	c.Objects = []snapshot.Object{dep, rs}
	if fs := New().Run(c.Snapshot(), 5*time.Minute); len(fs) != 0 {
		for _, f := range fs {
			t.Errorf("finding %s %s: %s", f.Object, f.RootCause.ID, f.Summary)
		}
	}
	// Once the pod is overdue, the chain is reported.
	checktest.Deleted(10*time.Minute, 1800)(c.Pods[0])
	got := map[string]string{}
	for _, f := range New().Run(c.Snapshot(), 5*time.Minute) {
		got[f.Object.Name] = f.RootCause.ID
	}
	if got["web"] != RootCauseDependentsRemaining || got["web-6d4cf56db6"] != RootCauseDependentsRemaining {
		t.Errorf("overdue pod: findings %v, want the Deployment and ReplicaSet dependents-remaining", got)
	}
}
