package e2e

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The fix engine's test drives every action against a real apiserver through a test-only check,
// so the engine is tested whatever real checks exist. The check is a test double of a real one:
// it reports objects that carry engineAnnotFixes and proposes those fixes, dropping a
// remove-finalizer fix whose finalizer is gone, as a real check would; with no fix left there is
// no finding.
const (
	engineAnnotFixes     = "test.workloaddoctor.io/fixes"
	engineAnnotRootCause = "test.workloaddoctor.io/root-cause"
)

type engineCheck struct{}

// engineActions are every action of the catalog: the test double's root causes offer each, so
// NewFinding keeps whatever fixes an object's annotation asks for.
var engineActions = []string{checks.ActionRemoveFinalizer, checks.ActionForceDelete, checks.ActionEvictPod,
	checks.ActionRequeueWorkload, checks.ActionRestartControllerLeader}

func (engineCheck) Info() checks.Info {
	return checks.Info{ID: "annotated", Title: "test double",
		RootCauses: []checks.RootCause{{ID: "broken", Severity: report.SeverityError, Actions: engineActions},
			{ID: "node-missing", Severity: report.SeverityError, Actions: engineActions}},
		Needs: []checks.Need{{Input: snapshot.InputPods, PodAnnotations: []string{engineAnnotFixes, engineAnnotRootCause}}, {Input: snapshot.InputObjects}}}
}

func (c engineCheck) Run(s *snapshot.Snapshot, _ time.Duration) []report.Finding {
	var out []report.Finding
	add := func(apiVersion, kind string, m metav1.Object) {
		raw, ok := m.GetAnnotations()[engineAnnotFixes]
		if !ok {
			return
		}
		var fixes []report.Fix
		if err := json.Unmarshal([]byte(raw), &fixes); err != nil {
			return
		}
		fixes = slices.DeleteFunc(fixes, func(fx report.Fix) bool {
			return fx.Action == "remove-finalizer" && !slices.Contains(m.GetFinalizers(), fx.Params["finalizer"])
		})
		if len(fixes) == 0 {
			return
		}
		rc := m.GetAnnotations()[engineAnnotRootCause]
		if rc == "" {
			rc = "broken"
		}
		out = append(out, checks.NewFinding(c.Info(), checks.Draft{RootCause: rc, Object: checks.Ref(apiVersion, kind, m),
			Owner: checks.OwnerRef(m.GetNamespace(), snapshot.ControllerOf(m)), Summary: kind + " marked broken", Fixes: fixes}))
	}
	for _, p := range s.Pods {
		add("v1", "Pod", p)
	}
	for _, o := range s.Objects {
		add(o.APIVersion(), o.Kind, o.Meta)
	}
	return out
}

type engineFixture struct {
	t       *testing.T
	c       *testcluster.Cluster
	kube    kubernetes.Interface
	clients fix.Clients
	reg     *checks.Registry
	cat     *fix.Catalog
}

func newEngineFixture(t *testing.T) *engineFixture {
	c := testcluster.Start(t, testcluster.Options{})
	c.InstallCRDs(t)
	clients, err := fix.NewClients(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &engineFixture{t: t, c: c, kube: c.Clientset(), clients: clients, reg: checks.NewRegistry(engineCheck{}), cat: fix.NewCatalog()}
}

func (fx *engineFixture) namespace(t *testing.T, name string) string {
	t.Helper()
	if _, err := fx.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return name
}

// plan scans ns ("" for everything) with the test check and plans every finding's default fix.
func (fx *engineFixture) plan(t *testing.T, ns string) []*fix.Step {
	t.Helper()
	rep, _, err := scan.Run(t.Context(), fx.clients.Clients, scan.Options{
		Scope: snapshot.Scope{Namespace: ns, AllNamespaces: ns == ""}, Checks: fx.reg.All(), MinAge: 0})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	var mine []report.Finding
	for _, f := range rep.Findings {
		if ns != "" || f.Object.Namespace == "" {
			mine = append(mine, f)
		}
	}
	steps, refused := fix.Select(fx.cat, mine, fix.Selection{})
	if len(refused) > 0 {
		t.Fatalf("plan refused %+v", refused)
	}
	return steps
}

// run applies steps and returns the results and the audit lines.
func (fx *engineFixture) run(t *testing.T, dry fix.DryRun, steps []*fix.Step) ([]fix.Result, []fix.AuditRecord) {
	t.Helper()
	var audit bytes.Buffer
	e := fix.NewEngine(fx.clients, fix.Options{DryRun: dry, Registry: fx.reg, Catalog: fx.cat, Audit: &audit, VerifyTimeout: 5 * time.Second})
	rs := e.Run(t.Context(), fix.Prepare(t.Context(), fx.clients, fx.cat, steps, ""))
	var recs []fix.AuditRecord
	for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		if line == "" {
			continue
		}
		var rec fix.AuditRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != len(rs) {
		t.Errorf("%d audit lines for %d results", len(recs), len(rs))
	}
	return rs, recs
}

func engineFixes(t *testing.T, fixes ...report.Fix) string {
	t.Helper()
	b, err := json.Marshal(fixes)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stuckConfigMap creates a ConfigMap with finalizers and deletes it, so it stays Terminating.
func (fx *engineFixture) stuckConfigMap(t *testing.T, ns, name string, finalizers []string, fixes ...report.Fix) *corev1.ConfigMap {
	t.Helper()
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers,
		Annotations: map[string]string{engineAnnotFixes: engineFixes(t, fixes...)}}}
	if _, err := fx.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	if err := fx.kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete configmap: %v", err)
	}
	got, err := fx.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("configmap %s should be Terminating: %v", name, err)
	}
	return got
}

func (fx *engineFixture) events(t *testing.T, ns string, uid types.UID) []corev1.Event {
	t.Helper()
	l, err := fx.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		if e.Reason == fix.EventReason && e.InvolvedObject.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

func engineWantStatus(t *testing.T, rs []fix.Result, want ...fix.Status) {
	t.Helper()
	var got []fix.Status
	for _, r := range rs {
		got = append(got, r.Status)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("statuses = %v, want %v\n%+v", got, want, rs)
	}
}

func engineRemoveFinalizer(name string) report.Fix {
	return report.Fix{Action: "remove-finalizer", Risk: report.RiskLow, Params: map[string]string{"finalizer": name}}
}

func TestFixEngineAgainstAPIServer(t *testing.T) {
	fx := newEngineFixture(t)

	t.Run("remove-finalizer keeps the other finalizers in order and records it", func(t *testing.T) {
		ns := fx.namespace(t, "rm-finalizer")
		cm := fx.stuckConfigMap(t, ns, "data", []string{"example.com/a", "example.com/stuck", "example.com/b"}, engineRemoveFinalizer("example.com/stuck"))
		rs, recs := fx.run(t, fix.DryRunNone, fx.plan(t, ns))
		engineWantStatus(t, rs, fix.StatusApplied)
		got, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"example.com/a", "example.com/b"}; !reflect.DeepEqual(got.Finalizers, want) {
			t.Errorf("finalizers = %v, want %v", got.Finalizers, want)
		}
		r := rs[0]
		if !r.Verified || r.ResourceVersionBefore != cm.ResourceVersion || r.ResourceVersionAfter != got.ResourceVersion {
			t.Errorf("result %+v: want verified, rv %s -> %s", r, cm.ResourceVersion, got.ResourceVersion)
		}
		evs := fx.events(t, ns, cm.UID)
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeNormal || evs[0].Source.Component != fix.EventComponent ||
			!strings.Contains(evs[0].Message, "remove-finalizer applied") || !strings.Contains(evs[0].Message, "testcluster-admin") {
			t.Errorf("events = %+v, want one Normal WorkloadDoctorFix event naming the action and user", evs)
		}
		rec := recs[0]
		if rec.User != "testcluster-admin" || rec.Action != "remove-finalizer" || rec.Result != fix.StatusApplied || rec.Object.UID != string(cm.UID) ||
			rec.ResourceVersionBefore != cm.ResourceVersion || rec.ResourceVersionAfter != got.ResourceVersion || rec.Time.IsZero() {
			t.Errorf("audit record = %+v", rec)
		}
	})

	t.Run("two finalizers of one finding are removed one after the other", func(t *testing.T) {
		ns := fx.namespace(t, "rm-two")
		fx.stuckConfigMap(t, ns, "data", []string{"example.com/one", "example.com/keep", "example.com/two"},
			engineRemoveFinalizer("example.com/one"), engineRemoveFinalizer("example.com/two"))
		rs, _ := fx.run(t, fix.DryRunNone, fx.plan(t, ns))
		engineWantStatus(t, rs, fix.StatusApplied, fix.StatusApplied)
		got, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"example.com/keep"}; !reflect.DeepEqual(got.Finalizers, want) {
			t.Errorf("finalizers = %v, want %v", got.Finalizers, want)
		}
	})

	t.Run("an object changed between plan and apply is refused and left untouched", func(t *testing.T) {
		ns := fx.namespace(t, "rm-race")
		fx.stuckConfigMap(t, ns, "data", []string{"example.com/stuck"}, engineRemoveFinalizer("example.com/stuck"))
		steps := fx.plan(t, ns)
		bumped, err := fx.kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "data", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs, recs := fx.run(t, fix.DryRunNone, steps)
		engineWantStatus(t, rs, fix.StatusRefused)
		if !strings.Contains(rs[0].Reason, "changed since the plan") {
			t.Errorf("reason = %q", rs[0].Reason)
		}
		got, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != bumped.ResourceVersion || !reflect.DeepEqual(got.Finalizers, []string{"example.com/stuck"}) {
			t.Errorf("object was written: rv %s (want %s), finalizers %v", got.ResourceVersion, bumped.ResourceVersion, got.Finalizers)
		}
		if evs := fx.events(t, ns, got.UID); len(evs) != 0 {
			t.Errorf("a refused action left events %+v", evs)
		}
		if recs[0].Result != fix.StatusRefused {
			t.Errorf("audit = %+v", recs[0])
		}
	})

	t.Run("the server enforces the patch's tests: stale resourceVersion or a moved finalizer", func(t *testing.T) {
		ns := fx.namespace(t, "rm-guard")
		cm := fx.stuckConfigMap(t, ns, "data", []string{"example.com/a", "example.com/stuck"}, engineRemoveFinalizer("example.com/stuck"))
		ref := report.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "data", UID: string(cm.UID)}
		// The metadata client remove-finalizer patches with.
		ri := fx.clients.Metadata.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
		bumped, err := fx.kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "data", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for name, patch := range map[string]func() ([]byte, error){
			"stale resourceVersion": func() ([]byte, error) {
				return fix.FinalizerPatch(string(cm.UID), cm.ResourceVersion, 1, "example.com/stuck")
			},
			"finalizer at another index": func() ([]byte, error) {
				return fix.FinalizerPatch(string(cm.UID), bumped.ResourceVersion, 0, "example.com/stuck")
			},
			"another uid": func() ([]byte, error) {
				return fix.FinalizerPatch("0000", bumped.ResourceVersion, 1, "example.com/stuck")
			},
		} {
			p, err := patch()
			if err != nil {
				t.Fatal(err)
			}
			_, err = ri.Patch(t.Context(), "data", types.JSONPatchType, p, metav1.PatchOptions{})
			if o := fix.WriteFailure("patch", ref, err); err == nil || o.Status != fix.StatusRefused {
				t.Errorf("%s: err %v -> %+v, want refused", name, err, o)
			}
		}
		got, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != bumped.ResourceVersion {
			t.Errorf("a guarded patch wrote the object: rv %s, want %s", got.ResourceVersion, bumped.ResourceVersion)
		}
	})

	t.Run("a finalizer removed by someone else is already resolved, without a write", func(t *testing.T) {
		ns := fx.namespace(t, "rm-resolved")
		fx.stuckConfigMap(t, ns, "kept", []string{"example.com/stuck", "example.com/other"}, engineRemoveFinalizer("example.com/stuck"))
		fx.stuckConfigMap(t, ns, "gone", []string{"example.com/stuck"}, engineRemoveFinalizer("example.com/stuck"))
		steps := fx.plan(t, ns)
		for _, name := range []string{"kept", "gone"} {
			cm, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.Finalizers = slices.DeleteFunc(cm.Finalizers, func(f string) bool { return f == "example.com/stuck" })
			if _, err := fx.kube.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		kept, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "kept", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rs, _ := fx.run(t, fix.DryRunNone, steps)
		engineWantStatus(t, rs, fix.StatusAlreadyResolved, fix.StatusAlreadyResolved)
		if !strings.Contains(rs[0].Reason+rs[1].Reason, "no longer exists") {
			t.Errorf("reasons %q / %q: the deleted one should say so", rs[0].Reason, rs[1].Reason)
		}
		after, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "kept", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != kept.ResourceVersion {
			t.Errorf("an already-resolved action wrote: rv %s -> %s", kept.ResourceVersion, after.ResourceVersion)
		}
	})

	t.Run("server dry run writes nothing", func(t *testing.T) {
		ns := fx.namespace(t, "rm-dry")
		cm := fx.stuckConfigMap(t, ns, "data", []string{"example.com/stuck"}, engineRemoveFinalizer("example.com/stuck"))
		rs, recs := fx.run(t, fix.DryRunServer, fx.plan(t, ns))
		engineWantStatus(t, rs, fix.StatusDryRun)
		got, err := fx.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "data", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("dry run deleted the object: %v", err)
		}
		if got.ResourceVersion != cm.ResourceVersion || len(fx.events(t, ns, cm.UID)) != 0 {
			t.Errorf("dry run wrote: rv %s -> %s, events %v", cm.ResourceVersion, got.ResourceVersion, fx.events(t, ns, cm.UID))
		}
		if recs[0].DryRun != fix.DryRunServer || recs[0].Result != fix.StatusDryRun {
			t.Errorf("audit = %+v", recs[0])
		}
	})

	t.Run("remove-finalizer on a cluster-scoped custom resource", func(t *testing.T) {
		gvr := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "sidecarsets"}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
			"metadata": map[string]any{"name": "inject", "finalizers": []any{"example.com/stuck"},
				"annotations": map[string]any{engineAnnotFixes: engineFixes(t, engineRemoveFinalizer("example.com/stuck"))}},
			"spec": map[string]any{"containers": []any{}},
		}}
		created, err := fx.c.Dynamic().Resource(gvr).Create(t.Context(), obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := fx.c.Dynamic().Resource(gvr).Delete(t.Context(), "inject", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rs, _ := fx.run(t, fix.DryRunNone, fx.plan(t, ""))
		engineWantStatus(t, rs, fix.StatusApplied)
		if _, err := fx.c.Dynamic().Resource(gvr).Get(t.Context(), "inject", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("sidecarset should be gone once its last finalizer is removed: %v", err)
		}
		if evs := fx.events(t, metav1.NamespaceDefault, created.GetUID()); len(evs) != 1 {
			t.Errorf("want the event of a cluster-scoped object in default, got %+v", evs)
		}
	})

	t.Run("force-delete removes a pod stuck on a missing node", func(t *testing.T) {
		ns := fx.namespace(t, "force")
		p := enginePod(ns, "web-0", map[string]string{engineAnnotFixes: engineFixes(t, report.Fix{Action: "force-delete", Risk: report.RiskHigh}),
			engineAnnotRootCause: "node-missing"})
		p.Spec.NodeName = "node-that-is-gone"
		created := fx.createPod(t, p)
		if err := fx.kube.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rs, _ := fx.run(t, fix.DryRunNone, fx.plan(t, ns))
		engineWantStatus(t, rs, fix.StatusApplied)
		if _, err := fx.kube.CoreV1().Pods(ns).Get(t.Context(), p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod should be gone: %v", err)
		}
		if evs := fx.events(t, ns, created.UID); len(evs) != 1 {
			t.Errorf("events = %+v", evs)
		}
	})

	t.Run("requeue-workload annotates the owner once, and refuses a replaced owner", func(t *testing.T) {
		ns := fx.namespace(t, "requeue")
		gvr := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
		cs := fx.cloneSet(t, ns, "web")
		requeue := engineFixes(t, report.Fix{Action: "requeue-workload", Risk: report.RiskLow})
		for _, name := range []string{"web-a", "web-b"} {
			p := enginePod(ns, name, map[string]string{engineAnnotFixes: requeue})
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: cs.GetUID(),
				Controller: enginePtr(true), BlockOwnerDeletion: enginePtr(true)}}
			fx.createPod(t, p)
		}
		steps := fx.plan(t, ns)
		if len(steps) != 1 || len(steps[0].Findings) != 2 {
			t.Fatalf("want one requeue step for two pods, got %q", engineStepSummary(steps))
		}
		rs, _ := fx.run(t, fix.DryRunNone, steps)
		engineWantStatus(t, rs, fix.StatusApplied)
		got, err := fx.c.Dynamic().Resource(gvr).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := got.GetAnnotations()[fix.AnnotationRequeuedAt]; v == "" {
			t.Errorf("annotation %s missing: %v", fix.AnnotationRequeuedAt, got.GetAnnotations())
		}
		if evs := fx.events(t, ns, cs.GetUID()); len(evs) != 1 {
			t.Errorf("events on the CloneSet = %+v", evs)
		}

		// The CloneSet is deleted and recreated under the same name: the pods still point at the old
		// uid, so the step is refused, and the server would refuse the patch too (uid is immutable).
		steps = fx.plan(t, ns)
		if err := fx.c.Dynamic().Resource(gvr).Namespace(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		fresh := fx.cloneSet(t, ns, "web")
		rs, _ = fx.run(t, fix.DryRunNone, steps)
		engineWantStatus(t, rs, fix.StatusRefused)
		p, err := fix.RequeuePatch(string(cs.GetUID()), "x")
		if err != nil {
			t.Fatal(err)
		}
		_, err = fx.c.Dynamic().Resource(gvr).Namespace(ns).Patch(t.Context(), "web", types.MergePatchType, p, metav1.PatchOptions{})
		if o := fix.WriteFailure("patch", steps[0].Target, err); o.Status != fix.StatusRefused {
			t.Errorf("merge patch with the old uid: %v -> %+v, want refused", err, o)
		}
		after, err := fx.c.Dynamic().Resource(gvr).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.GetResourceVersion() != fresh.GetResourceVersion() {
			t.Errorf("the new CloneSet was written: %v", after.GetAnnotations())
		}
	})

	t.Run("restart-controller-leader deletes the holder pod once another replica is Ready; a changed holder is refused", func(t *testing.T) {
		ns := fx.namespace(t, "leader")
		rs := fx.replicaSet(t, ns, "manager-7d9f8")
		replica := func(name string) *corev1.Pod {
			p := enginePod(ns, name, nil)
			p.Labels = rs.Spec.Template.Labels
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: enginePtr(true)}}
			return p
		}
		mgr := replica("manager-7d9f8-abcde")
		mgrPod := fx.runningPod(t, mgr)
		holder := "manager-7d9f8-abcde_0b6e0b0e-1111-2222-3333-444455556666"
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kruise-manager", Namespace: ns},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: enginePtr(holder), LeaseDurationSeconds: enginePtr(int32(15))}}
		if _, err := fx.kube.CoordinationV1().Leases(ns).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		restart := report.Fix{Action: "restart-controller-leader", Risk: report.RiskMedium,
			Params: map[string]string{"leaseNamespace": ns, "leaseName": "kruise-manager", "holderIdentity": holder}}
		fx.createPod(t, enginePod(ns, "stuck", map[string]string{engineAnnotFixes: engineFixes(t, restart)}))

		// The finding said medium risk, but right before the delete no other replica is Ready:
		// restarting the only one would leave OpenKruise's fail-closed pod webhook without a
		// server, so the unnamed action is refused and nothing is deleted.
		results, _ := fx.run(t, fix.DryRunNone, fx.plan(t, ns))
		engineWantStatus(t, results, fix.StatusRefused)
		if r := results[0].Reason; !strings.Contains(r, "high risk, applied only when named with --action restart-controller-leader: no replica but the leader pod "+ns+"/"+mgr.Name+" is Ready now") ||
			!strings.Contains(r, "mpod.kb.io") {
			t.Errorf("reason = %q", r)
		}
		if p, err := fx.kube.CoreV1().Pods(ns).Get(t.Context(), mgr.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("the only replica was touched: %v", err)
		}

		// A Ready standby of the same ReplicaSet: the restart goes ahead.
		fx.runningPod(t, replica("manager-7d9f8-k2m4p"))
		results, recs := fx.run(t, fix.DryRunNone, fx.plan(t, ns))
		engineWantStatus(t, results, fix.StatusApplied)
		if _, err := fx.kube.CoreV1().Pods(ns).Get(t.Context(), mgr.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("leader pod should be gone: %v", err)
		}
		if recs[0].Object.UID != string(mgrPod.UID) || !strings.Contains(results[0].Verification, "still names the old holder") {
			t.Errorf("result %+v / audit %+v", results[0], recs[0])
		}
		if evs := fx.events(t, ns, mgrPod.UID); len(evs) != 1 {
			t.Errorf("events on the leader pod = %+v", evs)
		}
		// Another replica can take the Lease over.
		l, err := fx.kube.CoordinationV1().Leases(ns).Get(t.Context(), "kruise-manager", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.HolderIdentity = enginePtr("manager-7d9f8-fghij_77777777-1111-2222-3333-444455556666")
		if _, err := fx.kube.CoordinationV1().Leases(ns).Update(t.Context(), l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a new holder could not take the Lease: %v", err)
		}
		// The finding still names the old holder: the leader changed, so nothing is deleted.
		fx.createPod(t, enginePod(ns, "manager-7d9f8-fghij", nil))
		results, _ = fx.run(t, fix.DryRunNone, fx.plan(t, ns))
		engineWantStatus(t, results, fix.StatusRefused)
		if !strings.Contains(results[0].Reason, "leader changed") {
			t.Errorf("reason = %q", results[0].Reason)
		}
		if _, err := fx.kube.CoreV1().Pods(ns).Get(t.Context(), "manager-7d9f8-fghij", metav1.GetOptions{}); err != nil {
			t.Errorf("the new leader was touched: %v", err)
		}
	})

	t.Run("evict-pod evicts, a PodDisruptionBudget refusal is reported, a pod without a controller is left alone", func(t *testing.T) {
		ns := fx.namespace(t, "evict")
		evict := engineFixes(t, report.Fix{Action: "evict-pod", Risk: report.RiskMedium})
		// Each evicted pod has a sibling Ready pod in a ReplicaSet of 2, so its budget (one pod
		// at a time) allows it; nothing recreates pods in this cluster.
		free := fx.runningPod(t, fx.replicaSetPods(t, ns, "free", evict))
		guardedPod := fx.runningPod(t, fx.replicaSetPods(t, ns, "guarded", evict))
		fx.blockingPDB(t, ns, "guarded", map[string]string{"app": "guarded"})
		bare := fx.runningPod(t, enginePod(ns, "bare", map[string]string{engineAnnotFixes: evict}))

		results, _ := fx.run(t, fix.DryRunNone, fx.plan(t, ns))
		byName := map[string]fix.Result{}
		for _, r := range results {
			byName[r.Object.Name] = r
		}
		if r := byName["bare"]; r.Status != fix.StatusRefused || !strings.Contains(r.Reason, "no controller") {
			t.Errorf("pod without a controller: %+v, want refused", r)
		}
		if got, err := fx.kube.CoreV1().Pods(ns).Get(t.Context(), "bare", metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil || got.UID != bare.UID {
			t.Errorf("the pod without a controller was touched: %v", err)
		}
		if r := byName["free"]; r.Status != fix.StatusApplied || !r.Verified {
			t.Errorf("free pod: %+v, want applied", r)
		}
		if r := byName["guarded"]; r.Status != fix.StatusRefused || !strings.Contains(r.Reason, "429") || !strings.Contains(r.Reason, "disruption budget") {
			t.Errorf("guarded pod: %+v, want refused with the server's 429", r)
		}
		if _, err := fx.kube.CoreV1().Pods(ns).Get(t.Context(), "free", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("evicted pod still there: %v", err)
		}
		got, err := fx.kube.CoreV1().Pods(ns).Get(t.Context(), "guarded", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp != nil || got.ResourceVersion != guardedPod.ResourceVersion {
			t.Errorf("the guarded pod was touched: %v %+v", err, got.ObjectMeta)
		}
		if len(fx.events(t, ns, free.UID)) != 1 || len(fx.events(t, ns, guardedPod.UID)) != 0 {
			t.Errorf("want an event on the evicted pod only")
		}
	})

	// Run and the plan it is given (fixrun_test.go).
	t.Run("run applies the plan as prepared and leaves it so", fx.runLeavesThePlanAsItWas)
	t.Run("an interrupted run marks what it never tried", fx.runInterruptedMarksNotAttempted)
	t.Run("a plan not prepared evicts nothing", fx.runWithoutBudgetsEvictsNothing)
}

func enginePtr[T any](v T) *T { return &v }

func engineStepSummary(steps []*fix.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Action+" "+s.Target.String()+" "+s.Params["finalizer"]+" "+strings.Join(s.FindingIDs(), ","))
	}
	return out
}

func enginePod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
}

// replicaSetPods creates a ReplicaSet "name" of 2 replicas and one Ready pod of it without fixes,
// and returns its pod "name" carrying the fixes, for the caller to create.
func (fx *engineFixture) replicaSetPods(t *testing.T, ns, name, fixes string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": name}
	rs, err := fx.kube.AppsV1().ReplicaSets(ns).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: enginePtr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ReplicaSet: %v", err)
	}
	owned := func(p *corev1.Pod) *corev1.Pod {
		p.Labels = labels
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: rs.UID, Controller: enginePtr(true)}}
		return p
	}
	fx.runningPod(t, owned(enginePod(ns, name+"-sibling", nil)))
	return owned(enginePod(ns, name, map[string]string{engineAnnotFixes: fixes}))
}

func (fx *engineFixture) createPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := fx.kube.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
	return got
}

// runningPod creates a pod and reports it Running and Ready, as a kubelet would; a Pending pod
// ignores PodDisruptionBudgets.
func (fx *engineFixture) runningPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got := fx.createPod(t, p)
	now := metav1.Now()
	got.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}}
	got, err := fx.kube.CoreV1().Pods(p.Namespace).UpdateStatus(t.Context(), got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("set pod %s running: %v", p.Name, err)
	}
	return got
}

// blockingPDB creates a PDB with minAvailable 1 and the status the disruption controller
// computes for one healthy pod: no disruption allowed.
func (fx *engineFixture) blockingPDB(t *testing.T, ns, name string, sel map[string]string) {
	t.Helper()
	one := intstr.FromInt32(1)
	pdb, err := fx.kube.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: sel}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 0,
		CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := fx.kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(t.Context(), pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (fx *engineFixture) cloneSet(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/app:1"}}}}},
	}}
	got, err := fx.c.Dynamic().Resource(gvr).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cloneset: %v", err)
	}
	return got
}

func (fx *engineFixture) replicaSet(t *testing.T, ns, name string) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": "manager"}
	rs, err := fx.kube.AppsV1().ReplicaSets(ns).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: enginePtr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example/manager:1"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create replicaset: %v", err)
	}
	return rs
}
