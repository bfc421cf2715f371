package builtin_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The checks' cost apart from the API: every registered check on a synthetic snapshot of 100,000
// pods shaped like the population bench/ seeds into a real cluster (groups of 20 pods owned by
// ReplicaSets or CloneSets over 1,000 namespaces and 500 nodes, one pod in 200 stuck, Warning
// events). As the collector builds it, every pod is metadata-only and the candidates the checks
// select are full objects.
//
//	go test -run '^$' -bench . -benchmem ./pkg/checks/builtin/

const (
	benchPods       = 100_000
	benchNamespaces = 1000
	benchNodes      = 500
	benchDeadNodes  = 5
	benchGroup      = 20
	benchStuckEvery = 200
)

var (
	benchOnce sync.Once
	benchSnap *snapshot.Snapshot
)

func benchSnapshot(b *testing.B) *snapshot.Snapshot {
	b.Helper()
	benchOnce.Do(func() { benchSnap = syntheticSnapshot(b, benchPods) })
	return benchSnap
}

// BenchmarkChecks runs all registered checks, then each alone.
func BenchmarkChecks(b *testing.B) {
	s := benchSnapshot(b)
	all := builtin.Checks().All()
	b.Run("all", func(b *testing.B) {
		var n int
		for b.Loop() {
			findings, _ := checks.Run(s, all, -1)
			n = len(findings)
		}
		b.ReportMetric(float64(n), "findings")
	})
	for _, c := range all {
		b.Run(c.Info().ID, func(b *testing.B) {
			var n int
			for b.Loop() {
				findings, _ := checks.Run(s, []checks.Check{c}, -1)
				n = len(findings)
			}
			b.ReportMetric(float64(n), "findings")
		})
	}
}

// BenchmarkPodCandidates is the declaration the collector asks each check for on the
// metadata-only snapshot, and the pods it has due there: those read in full in the first round.
func BenchmarkPodCandidates(b *testing.B) {
	s := benchSnapshot(b)
	for _, c := range builtin.Checks().All() {
		d, ok := c.(checks.ReadDeclarer)
		if !ok {
			continue
		}
		b.Run(c.Info().ID, func(b *testing.B) {
			var n int
			for b.Loop() {
				n = len(d.DeclareReads(s).PodsDue(s))
			}
			b.ReportMetric(float64(n), "candidates")
		})
	}
}

// BenchmarkIndex is the snapshot's indexing, which the collector runs twice per scan.
func BenchmarkIndex(b *testing.B) {
	s := benchSnapshot(b)
	for b.Loop() {
		s.Index()
	}
}

// syntheticSnapshot builds the snapshot a scan of the bench population collects.
func syntheticSnapshot(b testing.TB, nPods int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		Now: checktest.Now, ServerVersion: "v1.37.1", Scope: snapshot.Scope{AllNamespaces: true}, Settings: snapshot.DefaultSettings(),
		Unread: map[snapshot.Input]error{}, Limits: map[snapshot.Input]string{}, Logs: map[string]string{},
		Installed: map[string]bool{kruise.Group: true},
	}
	for i := range benchNamespaces {
		s.Namespaces = append(s.Namespaces, checktest.Namespace(benchNS(i), checktest.UID(benchUID("ns", i)), checktest.CreatedAgo(30*24*time.Hour)))
	}
	for i := range benchNodes {
		ready, since, renewed := corev1.ConditionTrue, 72*time.Hour, 5*time.Second
		if i < benchDeadNodes {
			ready, since, renewed = corev1.ConditionUnknown, time.Hour, time.Hour
		}
		s.Nodes = append(s.Nodes, checktest.Node(benchNodeName(i), checktest.UID(benchUID("node", i)), checktest.Ready(ready, since)))
		s.NodeLeases = append(s.NodeLeases, checktest.NodeLease(benchNodeName(i), renewed))
	}
	s.Deployments = append(s.Deployments, checktest.KruiseManager("v1.8.0", 1))
	s.Leases = append(s.Leases, checktest.KruiseLeaderLease(2*time.Second))
	mgrPod := checktest.Pod("kruise-system", kruise.HolderPod(checktest.KruiseHolder), checktest.OnNode(benchNodeName(benchDeadNodes)))
	s.ControllerPods = append(s.ControllerPods, mgrPod)
	s.Logs[mgrPod.Namespace+"/"+mgrPod.Name] = ""

	full := map[types.UID]*corev1.Pod{}
	for g := 0; g*benchGroup < nPods; g++ {
		ns := benchNS(g % benchNamespaces)
		cloneSet := g%4 == 0
		app := fmt.Sprintf("svc-%05d", g)
		owner := checktest.OwnedBy("apps/v1", "ReplicaSet", app+"-7d9f8c6b5d", benchUID("rs", g))
		revision := app + "-7d9f8c6b5"
		if cloneSet {
			w := benchCloneSet(b, ns, app, g)
			s.Workloads = append(s.Workloads, w)
			owner = checktest.OwnedByWorkload(w)
			s.Events = append(s.Events, benchEvent(checktest.RefTo(w.APIVersion, w.Kind, w), corev1.EventTypeNormal, "SuccessfulCreate",
				"succeed to create pod "+app+"-abcde", g))
		}
		for k := range benchGroup {
			i := g*benchGroup + k
			if i >= nPods {
				break
			}
			p, f := benchPod(ns, app, revision, owner, cloneSet, i, k)
			s.Pods = append(s.Pods, &p.ObjectMeta)
			if f != nil {
				full[f.UID] = f
			}
			if i%10 == 3 {
				s.Events = append(s.Events, benchEvent(checktest.RefTo("v1", "Pod", p), corev1.EventTypeWarning, "Unhealthy",
					"Readiness probe failed: HTTP probe failed with statuscode: 503", i))
			}
		}
	}
	// As the collector does: the checks declare their reads on the metadata-only snapshot, then
	// the pods due are read in full.
	s.Index()
	for _, uid := range checks.DeclareReads(builtin.Checks().All(), s).PodsDue(s) {
		if f, ok := full[uid]; ok {
			s.FullPods = append(s.FullPods, f)
		} else if m, _ := s.Pod(uid); m != nil {
			p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: *m}
			s.FullPods = append(s.FullPods, benchFull(p, benchNodeName(benchDeadNodes+int(p.CreationTimestamp.Unix()%int64(benchNodes-benchDeadNodes)))))
		}
	}
	s.Index()
	return s
}

func benchNS(i int) string       { return fmt.Sprintf("team-%04d", i) }
func benchNodeName(i int) string { return fmt.Sprintf("node-%03d", i) }
func benchUID(kind string, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, len(kind)<<32|i))
}

func benchCloneSet(b testing.TB, ns, app string, g int) *kruise.Workload {
	gen := int64(1)
	if g%400 == 0 {
		gen = 2 // a spec the controller never observed
	}
	return checktest.Workload(b, kruise.KindCloneSet, ns, app, checktest.UID(benchUID("cs", g)), checktest.Generation(gen),
		checktest.CreatedAgo(48*time.Hour), checktest.Replicas(benchGroup), checktest.Selector(map[string]string{"app.kubernetes.io/name": app}),
		checktest.Template(benchContainers()...), checktest.UpdateStrategy(kruise.UpdateInPlaceIfPossible),
		checktest.LifecycleHooks(map[string]any{"preNormal": map[string]any{"labelsHandler": map[string]any{"example.com/warmed-up": "true"}}}),
		checktest.ManagedFields(
			checktest.Managed("kubectl", "", time.Hour, `{"f:spec":{"f:replicas":{}}}`),
			checktest.Managed("manager", "status", 59*time.Minute, `{"f:status":{}}`)),
		checktest.Status(map[string]any{"observedGeneration": int64(1), "replicas": int64(benchGroup), "readyReplicas": int64(benchGroup),
			"availableReplicas": int64(benchGroup), "updatedReplicas": int64(benchGroup), "updatedReadyReplicas": int64(benchGroup),
			"updateRevision": app + "-7d9f8c6b5", "currentRevision": app + "-7d9f8c6b5", "labelSelector": "app.kubernetes.io/name=" + app}))
}

// benchPod returns the metadata-only pod the bulk list yields and, for a stuck pod, its full object.
func benchPod(ns, app, revision string, owner checktest.Option, cloneSet bool, i, k int) (meta, full *corev1.Pod) {
	created := time.Duration(3600+i%7200) * time.Second
	p := checktest.Pod(ns, fmt.Sprintf("%s-%05x", app, k), checktest.UID(benchUID("pod", i)), checktest.CreatedAgo(created), owner,
		checktest.Labels(map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "v2.14.3",
			"team": ns, "tier": []string{"frontend", "backend", "worker"}[i/benchGroup%3]}),
		checktest.Annotations(map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
			"cni.projectcalico.org/podIP": fmt.Sprintf("10.%d.%d.%d/32", 64+(i>>16)&63, (i>>8)&255, i&255)}))
	p.ResourceVersion = fmt.Sprint(1000 + i)
	node := benchNodeName(benchDeadNodes + i%(benchNodes-benchDeadNodes))
	// The 8th pod of every 10th group: half of those groups are CloneSets.
	stuck := i%benchStuckEvery == 7
	if cloneSet {
		state := kruise.StateNormal
		p.Labels["controller-revision-hash"] = revision
		p.Labels["example.com/warmed-up"] = "true"
		if stuck {
			delete(p.Labels, "example.com/warmed-up")
			state = kruise.StatePreparingNormal
		}
		checktest.Lifecycle(state, created)(p)
	} else {
		p.Labels["pod-template-hash"] = "7d9f8c6b5d"
		if stuck {
			grace := int64(0)
			if (i/benchStuckEvery)%2 == 0 {
				checktest.Finalizers("", "example.com/cleanup")(p)
			} else {
				grace = 30
				node = benchNodeName(i % benchDeadNodes)
			}
			checktest.Deleted(time.Hour, grace)(p)
		}
	}
	if stuck {
		full = benchFull(p, node)
	}
	return p, full
}

// benchFull is the full object of a metadata-only pod: spec, status and managedFields.
func benchFull(meta *corev1.Pod, node string) *corev1.Pod {
	p := meta.DeepCopy()
	p.Spec.TerminationGracePeriodSeconds = ptrTo[int64](30)
	start := metav1.NewTime(p.CreationTimestamp.Add(3 * time.Second))
	checktest.OnNode(node)(p)
	checktest.Containers(benchContainers()...)(p)
	checktest.Running()(p)
	checktest.Conditions(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start})(p)
	p.Status.StartTime, p.Status.PodIP, p.Status.HostIP = &start, "10.64.0.1", "10.0.0.1"
	age := checktest.Now.Sub(p.CreationTimestamp.Time)
	checktest.ManagedFields(
		checktest.Managed("kube-controller-manager", "", age, `{"f:metadata":{"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{}}}`),
		checktest.Managed("kubelet", "status", age-3*time.Second, `{"f:status":{"f:conditions":{},"f:containerStatuses":{}}}`))(p)
	if len(p.Finalizers) > 0 {
		checktest.ManagedFields(checktest.Managed("cleanup-controller", "", age, checktest.MetadataFields(p.Finalizers, nil)))(p)
	}
	return p
}

func benchContainers() []corev1.Container {
	return []corev1.Container{
		{Name: "app", Image: "registry.example.com/shop/app:v2.14.3", ResizePolicy: checktest.ResizePolicy("cpu", "NotRequired", "memory", "RestartContainer")},
		{Name: "proxy", Image: "registry.example.com/mesh/proxy:v1.22.0"},
	}
}

func benchEvent(involved corev1.ObjectReference, typ, reason, msg string, i int) *corev1.Event {
	ago := time.Duration(i%3600) * time.Second
	return checktest.Event(involved, typ, reason, msg, checktest.From("kubelet"), checktest.Seen(ago, ago))
}

func ptrTo[T any](v T) *T { return &v }
