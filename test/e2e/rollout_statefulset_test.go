package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// stsImage is the image the StatefulSets run; stsBroken is the template change that makes the
// kubelet (kwok) crash-loop their pods.
const stsImage = "registry.example/db:1.0"

// stsBroken is a template whose pods crash at start: a new image, and kwok's CrashLoopBackOff stage.
var stsBroken = map[string]any{
	"metadata": map[string]any{"labels": map[string]any{kubelet.Label: kubelet.CrashLoopBackOff}},
	"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/db:1.1"}}},
}

// stsReverted takes stsBroken back: the template is again, byte for byte, the one the
// StatefulSet was created with.
var stsReverted = map[string]any{
	"metadata": map[string]any{"labels": map[string]any{kubelet.Label: nil}},
	"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": stsImage}}},
}

// stsAnnotated changes the template without breaking it (a new revision whose pods run).
func stsAnnotated(value any) map[string]any {
	return map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/config": value}}}
}

// StatefulSets stuck and not stuck, made by kube-controller-manager v1.37.1's StatefulSet
// controller on kwok's nodes, and the delete-pod fix of the one stuck by a broken pod. One cluster
// for the file; each subtest in its own namespace.
func TestRolloutStalledStatefulSet(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	c, _ := scenarioCluster(t)
	cs := c.Clientset()
	if _, err := cs.CoreV1().Nodes().Create(t.Context(), kwokNode("sts-node"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	waitNodeReady(t, cs, "sts-node", corev1.ConditionTrue)

	t.Run("forced rollback: the pod left on the bad revision is named and delete-pod replaces it", func(t *testing.T) {
		t.Parallel()
		stsForcedRollback(t, c)
	})
	t.Run("a partition, OnDelete and a completed rollout are no finding", func(t *testing.T) {
		t.Parallel()
		stsHealthy(t, c)
	})
	t.Run("a rollout to a crashing template is crash-looping, with no delete-pod", func(t *testing.T) {
		t.Parallel()
		const ns = "sts-crash"
		createNamespace(t, c, ns)
		good := stsCreate(t, cs, ns, "db", appsv1.StatefulSetUpdateStrategy{})
		bad := stsRollToCrash(t, cs, ns, "db", good)
		rep := pluginOn(c.Kubeconfig).scan(t, "-n", ns, "-o", "json", "--min-age", "0s").wantExit(2).agreed()
		if len(rep.Findings) != 1 {
			t.Fatalf("want one finding on StatefulSet db, got:\n%s", summaries(rep))
		}
		f := krFind(t, rep, "rollout-stalled", "db")
		// db-2 is on updateRevision: deleting it would bring back the same crashing template.
		assertFinding(t, f, "crash-looping", report.SeverityError, []string{"db-2", "CrashLoopBackOff"}, nil)
		if f.Object.Kind != "StatefulSet" {
			t.Errorf("finding on %s, want the StatefulSet", f.Object)
		}
		t.Logf("db stays on %s with db-2 crash-looping on %s: %s", good, bad, f.Summary)
	})
}

// stsForcedRollback: a StatefulSet of 3, OrderedReady, rolled to a crashing template and reverted.
// The controller's rolling update replaced db-2 first, on the bad revision; db-2 crash-loops and
// the controller waits for it to be Running and Ready before anything else (processReplica,
// pkg/controller/statefulset/stateful_set_control.go, kubernetes v1.37.1). The revert makes the
// good revision updateRevision again (getStatefulSetRevisions reuses the equal revision), but
// db-2 is never replaced: the documentation's forced rollback.
func stsForcedRollback(t *testing.T, c *testcluster.Cluster) {
	cs, wd := c.Clientset(), pluginOn(c.Kubeconfig)
	const ns = "sts-rollback"
	createNamespace(t, c, ns)
	good := stsCreate(t, cs, ns, "db", appsv1.StatefulSetUpdateStrategy{})
	bad := stsRollToCrash(t, cs, ns, "db", good)
	stsPatchTemplate(t, cs, ns, "db", stsReverted)
	stsWait(t, cs, ns, "db", "updateRevision back to "+good+" while db-2 stays on "+bad, func(s *appsv1.StatefulSet, pods map[string]*corev1.Pod) bool {
		p := pods["db-2"]
		return s.Status.UpdateRevision == good && s.Status.CurrentRevision == good && s.Status.ReadyReplicas == 2 &&
			p != nil && stsRevision(p) == bad && !bgServing(p)
	})
	broken := fixGetPod(t, cs, ns, "db-2")

	scanned := wd.scan(t, "-n", ns, "-o", "json", "--min-age", "0s").wantExit(2)
	rep := scanned.agreed()
	if len(rep.Findings) != 1 {
		t.Fatalf("want one finding on StatefulSet db, got:\n%s", summaries(rep))
	}
	f := krFind(t, rep, "rollout-stalled", "db")
	assertFinding(t, f, "statefulset-broken-pod", report.SeverityError, []string{"db-2", bad, good, "CrashLoopBackOff"}, []string{"delete-pod"})
	t.Logf("%s\n  %s", f.Summary, strings.Join(f.RootCause.Evidence, "\n  "))
	set, err := cs.AppsV1().StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (report.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: ns, Name: "db", UID: string(set.UID), ResourceVersion: set.ResourceVersion}); f.Object != want {
		t.Errorf("finding on %+v, want %+v", f.Object, want)
	}
	want := map[string]string{"pod": "db-2", "podUID": string(broken.UID), "revision": bad, "updateRevision": good}
	if fx := f.Fixes[0]; fx.Risk != report.RiskMedium || !maps.Equal(fx.Params, want) {
		t.Fatalf("fix %s risk %s params %v, want risk medium params %v", fx.Action, fx.Risk, fx.Params, want)
	}
	saved := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(saved, []byte(scanned.stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("updateRevision moved since the scan: refused, the pod untouched", func(t *testing.T) {
		// A third template, which runs: the controller still waits on db-2 before anything else.
		stsPatchTemplate(t, cs, ns, "db", stsAnnotated("v2"))
		moved := stsWait(t, cs, ns, "db", "a third updateRevision", func(s *appsv1.StatefulSet, _ map[string]*corev1.Pod) bool {
			return s.Status.UpdateRevision != good && s.Status.UpdateRevision != bad
		}).Status.UpdateRevision

		// fix re-checks the finding and sees the StatefulSet changed since the saved report.
		out := wd.fix(t, "--from-report", saved, f.ID, "--yes", "-o", "json").wantExit(3)
		d := fixParse(t, out.stdout, out.stderr)
		if len(d.Results) != 1 || d.Results[0].Status != "refused" || d.Results[0].Action != "delete-pod" ||
			!strings.Contains(d.Results[0].Reason, "changed since the plan") {
			t.Errorf("results %+v, want delete-pod refused as changed", d.Results)
		}
		// The action's own guard, with a re-check that (as in a race right before the write)
		// still sees the scan's finding: it reads the StatefulSet and refuses on updateRevision.
		rs := stsEngineFix(t, c, rep, f.ID)
		if len(rs) != 1 || rs[0].Status != fix.StatusRefused ||
			!strings.Contains(rs[0].Reason, fmt.Sprintf("updateRevision of %s/statefulset/db is now %s, the scan saw %s", ns, moved, good)) {
			t.Errorf("results %+v, want refused on the moved updateRevision", rs)
		}
		if p := fixGetPod(t, cs, ns, "db-2"); p.UID != broken.UID || p.DeletionTimestamp != nil {
			t.Errorf("db-2 was touched: uid %s (was %s), deletionTimestamp %v", p.UID, broken.UID, p.DeletionTimestamp)
		}
		stsPatchTemplate(t, cs, ns, "db", stsAnnotated(nil))
		stsWait(t, cs, ns, "db", "updateRevision back to "+good, func(s *appsv1.StatefulSet, _ map[string]*corev1.Pod) bool {
			return s.Status.UpdateRevision == good
		})
	})

	t.Run("fix deletes db-2 and the controller recreates it on updateRevision; the rollout completes", func(t *testing.T) {
		out := wd.fix(t, "-n", ns, "--min-age", "0s", f.ID, "--dry-run=server", "-o", "json").wantExit(0)
		if d := fixParse(t, out.stdout, out.stderr); len(d.Results) != 1 || d.Results[0].Status != "dry-run" {
			t.Fatalf("server dry run: %+v", d.Results)
		}
		if p := fixGetPod(t, cs, ns, "db-2"); p.UID != broken.UID || p.DeletionTimestamp != nil {
			t.Fatalf("the server dry run touched db-2")
		}

		r := fixOne(t, c.Kubeconfig, 0, "applied", "-n", ns, "--min-age", "0s", f.ID, "--yes")
		if r.Action != "delete-pod" || !r.Verified || r.Object.Name != "db-2" || r.Object.UID != string(broken.UID) {
			t.Errorf("result %+v, want delete-pod of db-2 (uid %s), verified", r, broken.UID)
		}
		// db-2 is gone, so the controller creates it again with updateRevision's template
		// (newVersionedStatefulSetPod, stateful_set_utils.go) and, once it is Ready, completes
		// the update (completeUpdate): currentRevision becomes updateRevision.
		stsWait(t, cs, ns, "db", "db-2 recreated on "+good+" and the rollout complete", func(s *appsv1.StatefulSet, pods map[string]*corev1.Pod) bool {
			p := pods["db-2"]
			return p != nil && p.UID != broken.UID && stsRevision(p) == good && bgServing(p) &&
				s.Status.CurrentRevision == good && s.Status.UpdateRevision == good && s.Status.UpdatedReplicas == 3 && s.Status.ReadyReplicas == 3
		})
		if rep := wd.scan(t, "-n", ns, "-o", "json", "--min-age", "0s").wantExit(0).agreed(); len(rep.Findings) != 0 {
			t.Errorf("findings after the fix:\n%s", summaries(rep))
		}
		// The scan's plan, applied again past its re-check, never deletes the replacement.
		fresh := fixGetPod(t, cs, ns, "db-2")
		rs := stsEngineFix(t, c, rep, f.ID)
		if len(rs) != 1 || rs[0].Status != fix.StatusRefused || !strings.Contains(rs[0].Reason, fmt.Sprintf("was replaced since the scan: its uid is now %s", fresh.UID)) {
			t.Errorf("results %+v, want refused: the pod was replaced", rs)
		}
		if p := fixGetPod(t, cs, ns, "db-2"); p.UID != fresh.UID || p.DeletionTimestamp != nil {
			t.Errorf("the replacement db-2 was touched")
		}
	})
}

// stsHealthy: StatefulSets whose pods are not all on updateRevision by design, and one whose
// rollout completed. A partition keeps the ordinals below it on currentRevision
// (newVersionedStatefulSetPod and updateStatefulSetAfterInvariantEstablished, which deletes only
// ordinals at or above it); OnDelete updates only the pods someone deletes (updateStatefulSet
// returns before the rolling update). None is a finding.
func stsHealthy(t *testing.T, c *testcluster.Cluster) {
	cs := c.Clientset()
	const ns = "sts-healthy"
	createNamespace(t, c, ns)
	partition := int32(2)
	staged := stsCreate(t, cs, ns, "staged", appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}})
	ondelete := stsCreate(t, cs, ns, "ondelete", appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType})
	done := stsCreate(t, cs, ns, "done", appsv1.StatefulSetUpdateStrategy{})
	for _, name := range []string{"staged", "ondelete", "done"} {
		stsPatchTemplate(t, cs, ns, name, stsAnnotated("v2"))
	}
	stsWait(t, cs, ns, "staged", "staged-2 updated, staged-0 and staged-1 held on "+staged, func(s *appsv1.StatefulSet, pods map[string]*corev1.Pod) bool {
		return s.Status.UpdateRevision != staged && s.Status.CurrentRevision == staged && s.Status.UpdatedReplicas == 1 && s.Status.ReadyReplicas == 3 &&
			stsOn(pods, s.Status.UpdateRevision, "staged-2") && stsOn(pods, staged, "staged-0", "staged-1")
	})
	stsWait(t, cs, ns, "ondelete", "a new updateRevision and every pod on "+ondelete, func(s *appsv1.StatefulSet, pods map[string]*corev1.Pod) bool {
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision != ondelete && s.Status.ReadyReplicas == 3 &&
			stsOn(pods, ondelete, "ondelete-0", "ondelete-1", "ondelete-2")
	})
	stsWait(t, cs, ns, "done", "the rollout complete", func(s *appsv1.StatefulSet, pods map[string]*corev1.Pod) bool {
		return s.Status.UpdateRevision != done && s.Status.CurrentRevision == s.Status.UpdateRevision && s.Status.UpdatedReplicas == 3 &&
			s.Status.ReadyReplicas == 3 && stsOn(pods, s.Status.UpdateRevision, "done-0", "done-1", "done-2")
	})
	if rep := pluginOn(c.Kubeconfig).scan(t, "-n", ns, "-o", "json", "--min-age", "0s").wantExit(0).agreed(); len(rep.Findings) != 0 {
		t.Errorf("findings on healthy StatefulSets:\n%s", summaries(rep))
	}
}

// stsCreate creates a StatefulSet of 3 pods (OrderedReady, the default) on kwok's node, waits until
// every pod is Ready and its first revision complete, and returns that revision.
func stsCreate(t *testing.T, cs kubernetes.Interface, ns, name string, strategy appsv1.StatefulSetUpdateStrategy) string {
	t.Helper()
	replicas := int32(3)
	labels := map[string]string{"app": name}
	d := kwokDeployment(name, replicas) // the template kwok's node accepts
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement, UpdateStrategy: strategy, Template: d.Spec.Template},
	}
	set.Spec.Template.Spec.Containers[0].Image = stsImage
	if _, err := cs.AppsV1().StatefulSets(ns).Create(t.Context(), set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create StatefulSet %s/%s: %v", ns, name, err)
	}
	return stsWait(t, cs, ns, name, "3 Ready pods on one revision", func(s *appsv1.StatefulSet, pods map[string]*corev1.Pod) bool {
		return s.Status.ObservedGeneration == s.Generation && s.Status.ReadyReplicas == 3 && s.Status.UpdatedReplicas == 3 &&
			s.Status.UpdateRevision != "" && s.Status.CurrentRevision == s.Status.UpdateRevision
	}).Status.UpdateRevision
}

// stsRollToCrash rolls the StatefulSet from revision good to stsBroken and waits until the
// controller replaced the highest ordinal on the new revision, that pod crash-loops, and the
// controller waits for it with the others still on good. It returns the bad revision.
func stsRollToCrash(t *testing.T, cs kubernetes.Interface, ns, name, good string) string {
	t.Helper()
	stsPatchTemplate(t, cs, ns, name, stsBroken)
	last := name + "-2"
	return stsWait(t, cs, ns, name, last+" crash-looping on the new revision, the others held", func(s *appsv1.StatefulSet, pods map[string]*corev1.Pod) bool {
		p := pods[last]
		return s.Status.ObservedGeneration == s.Generation && s.Status.UpdateRevision != good && s.Status.CurrentRevision == good &&
			s.Status.UpdatedReplicas == 1 && s.Status.ReadyReplicas == 2 &&
			p != nil && stsRevision(p) == s.Status.UpdateRevision && stsCrashLooping(p) && stsOn(pods, good, name+"-0", name+"-1")
	}).Status.UpdateRevision
}

// stsPatchTemplate applies a strategic merge patch to the StatefulSet's pod template, as
// `kubectl patch` does.
func stsPatchTemplate(t *testing.T, cs kubernetes.Interface, ns, name string, template map[string]any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Patch(t.Context(), name, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatalf("patch StatefulSet %s/%s: %v", ns, name, err)
	}
}

// stsWait waits until cond holds for the StatefulSet and its pods (by name), and returns the
// StatefulSet as then read.
func stsWait(t *testing.T, cs kubernetes.Interface, ns, name, what string, cond func(*appsv1.StatefulSet, map[string]*corev1.Pod) bool) *appsv1.StatefulSet {
	t.Helper()
	var set *appsv1.StatefulSet
	eventually(t, 2*time.Minute, fmt.Sprintf("StatefulSet %s/%s: %s", ns, name, what), func(ctx context.Context) (bool, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		pods := map[string]*corev1.Pod{}
		for i := range list.Items {
			pods[list.Items[i].Name] = &list.Items[i]
		}
		set = s
		return cond(s, pods), nil
	})
	return set
}

// stsRevision is the revision the StatefulSet controller labelled the pod with.
func stsRevision(p *corev1.Pod) string { return p.Labels[appsv1.StatefulSetRevisionLabel] }

// stsOn reports whether each named pod exists, is Ready and is on revision.
func stsOn(pods map[string]*corev1.Pod, revision string, names ...string) bool {
	for _, n := range names {
		if p := pods[n]; p == nil || stsRevision(p) != revision || !bgServing(p) {
			return false
		}
	}
	return true
}

// stsCrashLooping reports whether the kubelet (kwok) reports the pod's container in CrashLoopBackOff.
func stsCrashLooping(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff" {
			return !bgServing(p)
		}
	}
	return false
}

// stsStaleRechecker answers every re-check with the report the plan was made from: the finding
// still holds as scanned, so what decides is the action's own read right before the delete.
type stsStaleRechecker struct{ rep *report.Report }

func (r stsStaleRechecker) Recheck(context.Context, checks.Check, string) (*report.Report, error) {
	return r.rep, nil
}

// stsEngineFix applies finding id of rep through the fix engine in process, with the re-check
// answering rep.
func stsEngineFix(t *testing.T, c *testcluster.Cluster, rep *report.Report, id string) []fix.Result {
	t.Helper()
	clients, err := fix.NewClients(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	steps, refused := fix.Select(fix.NewCatalog(), rep.Findings, fix.Selection{IDs: []string{id}})
	if len(refused) > 0 || len(steps) != 1 {
		t.Fatalf("plan: %d steps, refused %+v", len(steps), refused)
	}
	e := fix.NewEngine(clients, fix.Options{Registry: builtin.Checks(), Rechecker: stsStaleRechecker{rep}})
	return e.Run(t.Context(), fix.Prepare(t.Context(), clients, nil, steps, ""))
}
