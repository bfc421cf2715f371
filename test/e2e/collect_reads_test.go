package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// requestLog records every request's method, path and query.
type requestLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
	l.mu.Unlock()
	return l.next.RoundTrip(req)
}

// loggedClients are the collector's clients for c, each request they send logged.
func loggedClients(t testing.TB, c *testcluster.Cluster) (*requestLog, collect.Clients) {
	t.Helper()
	log := &requestLog{}
	cfg := c.RESTConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log })
	clients, err := scan.Clients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return log, clients
}

// matching returns the logged requests with the given method and path whose query contains all of want.
func (l *requestLog) matching(method, path string, want ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs {
		m, rest, _ := strings.Cut(r, " ")
		p, q, _ := strings.Cut(rest, "?")
		if m != method || p != path {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(q, w)
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// pickCheck is a test check that asks for the full objects of the pods pick selects.
type pickCheck struct {
	pick func(*snapshot.Snapshot) []types.UID
}

func (pickCheck) Info() checks.Info {
	return checks.Info{ID: "pick", Threshold: time.Minute,
		Needs: []checks.Need{{Input: snapshot.InputPods, PodAnnotations: []string{"example.com/read"}}, {Input: snapshot.InputEvents}}}
}
func (c pickCheck) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	return snapshot.Reads{Pods: []snapshot.PodReads{{UIDs: c.pick(s)}}}
}
func (pickCheck) Run(*snapshot.Snapshot, time.Duration) []report.Finding { return nil }

// TestCollectorReadsCandidatesAndEventsServerSide checks how the collector reads what checks ask
// for: every pod metadata-only in one streamed LIST, without managedFields and with only the
// annotations a check reads; the pods of one workload with one LIST by label in their namespace,
// pods named by their own values of one label key with one set-based LIST, a pod nothing groups
// with one GET, never any other pod in full; and only the events the checks use, filtered by the
// apiserver.
func TestCollectorReadsCandidatesAndEventsServerSide(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	c.InstallCRDs(t)
	ctx := t.Context()
	cs := c.Clientset()
	for _, ns := range []string{"shop", "misc"} {
		createNamespace(t, c, ns)
	}
	create := func(ns, name string, labels map[string]string) *corev1.Pod {
		t.Helper()
		p := simplePod(ns, name)
		p.Labels = labels
		p.Annotations = map[string]string{"example.com/read": "kept", "example.com/unread": "dropped"}
		got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s/%s: %v", ns, name, err)
		}
		return got
	}
	want := map[types.UID]string{}
	for i := range 8 {
		p := create("shop", fmt.Sprintf("web-%d", i), map[string]string{"app": "web", "tier": "front"})
		want[p.UID] = p.Namespace + "/" + p.Name
	}
	for i := range 8 {
		create("shop", fmt.Sprintf("api-%d", i), map[string]string{"app": "api", "tier": "front"})
	}
	var loners []*corev1.Pod
	for i := range 2 {
		p := create("misc", fmt.Sprintf("job-%d", i), map[string]string{"job": fmt.Sprintf("job-%d", i)})
		want[p.UID] = p.Namespace + "/" + p.Name
		loners = append(loners, p)
	}
	create("misc", "other", map[string]string{"tier": "front"})
	solo := create("misc", "solo", nil)
	want[solo.UID] = solo.Namespace + "/" + solo.Name

	event := func(name, typ, reason string, ref corev1.ObjectReference) {
		t.Helper()
		now := metav1.NewTime(time.Now())
		_, err := cs.CoreV1().Events(ref.Namespace).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: ref.Namespace},
			InvolvedObject: ref, Type: typ, Reason: reason, Message: reason, Count: 1,
			FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: "kubelet"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create event %s: %v", name, err)
		}
	}
	podRef := corev1.ObjectReference{Kind: "Pod", Namespace: "misc", Name: loners[0].Name, UID: loners[0].UID, APIVersion: "v1"}
	event("probe", corev1.EventTypeWarning, "Unhealthy", podRef)
	event("started", corev1.EventTypeNormal, "Started", podRef)
	event("created", corev1.EventTypeNormal, "SuccessfulCreate", corev1.ObjectReference{Kind: kruise.KindCloneSet, Namespace: "shop",
		Name: "web", UID: "0b5c1c0e-1111-4c3a-9d51-0e5d2f7b8a11", APIVersion: kruise.CloneSets.GroupVersion().String()})

	log, clients := loggedClients(t, c)
	check := pickCheck{pick: func(s *snapshot.Snapshot) []types.UID {
		var out []types.UID
		for _, p := range s.Pods {
			if want[p.UID] != "" {
				out = append(out, p.UID)
			}
		}
		return out
	}}
	_, snap, err := scan.Run(ctx, clients, scan.Options{Scope: snapshot.Scope{AllNamespaces: true},
		Settings: snapshot.DefaultSettings(), Checks: []checks.Check{check}, MinAge: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Unread[snapshot.InputPods]; err != nil {
		t.Fatalf("pods unread: %v", err)
	}

	var full []string
	for _, p := range snap.FullPods {
		full = append(full, p.Namespace+"/"+p.Name)
		if want[p.UID] == "" {
			t.Errorf("pod %s/%s read in full, but no check asked for it", p.Namespace, p.Name)
		}
		if len(p.Spec.Containers) == 0 || len(p.ManagedFields) == 0 {
			t.Errorf("candidate %s/%s lacks its spec or managedFields", p.Namespace, p.Name)
		}
	}
	sort.Strings(full)
	if len(full) != len(want) {
		t.Errorf("read in full: %v, want the %d candidates", full, len(want))
	}
	for _, p := range snap.Pods {
		if _, isFull := snap.FullPod(p.UID); isFull || (p.Namespace != "shop" && p.Namespace != "misc") {
			continue
		}
		if len(p.ManagedFields) > 0 {
			t.Errorf("metadata-only pod %s/%s keeps its managedFields", p.Namespace, p.Name)
		}
		if len(p.Annotations) != 1 || p.Annotations["example.com/read"] != "kept" {
			t.Errorf("metadata-only pod %s/%s has annotations %v, want only the one the check reads", p.Namespace, p.Name, p.Annotations)
		}
	}
	// On an apiserver that streams list encodings, the bulk list is one streamed response.
	var bulk []string
	for _, r := range log.matching(http.MethodGet, "/api/v1/pods") {
		if !strings.Contains(r, "labelSelector=") {
			bulk = append(bulk, r)
		}
	}
	if len(bulk) != 1 || strings.Contains(bulk[0], "limit=") {
		t.Errorf("bulk pod list requests = %v, want one unpaginated request", bulk)
	}
	if got := log.matching(http.MethodGet, "/api/v1/namespaces/shop/pods", "labelSelector=app%3Dweb"); len(got) != 1 {
		t.Errorf("the workload's pods were not read with one LIST by label in their namespace: %v", got)
	}
	if got := log.matching(http.MethodGet, "/api/v1/pods", "labelSelector=job+in+%28job-0%2Cjob-1%29", "resourceVersion="); len(got) != 1 {
		t.Errorf("pods named by their own job label were not read with one set-based LIST at the list's resourceVersion: %v",
			log.matching(http.MethodGet, "/api/v1/pods"))
	}
	for _, p := range loners {
		if got := log.matching(http.MethodGet, "/api/v1/namespaces/misc/pods/"+p.Name); len(got) != 0 {
			t.Errorf("pod %s read with its own GET: %v", p.Name, got)
		}
	}
	if got := log.matching(http.MethodGet, "/api/v1/namespaces/misc/pods/solo", "resourceVersion="); len(got) != 1 {
		t.Errorf("pod solo: %d GETs at the list's resourceVersion, want 1", len(got))
	}
	for i := range 8 {
		if got := log.matching(http.MethodGet, fmt.Sprintf("/api/v1/namespaces/shop/pods/web-%d", i)); len(got) != 0 {
			t.Errorf("pod web-%d read with its own GET: %v", i, got)
		}
	}

	var events []string
	for _, e := range snap.Events {
		// The control plane emits events of its own (e.g. in default); only this test's count.
		if e.Namespace == "shop" || e.Namespace == "misc" {
			events = append(events, e.Name)
		}
	}
	sort.Strings(events)
	if strings.Join(events, ",") != "created,probe" {
		t.Errorf("events = %v, want the Warning and the one about a CloneSet, not the pod's Normal event", events)
	}
	for _, r := range log.matching(http.MethodGet, "/api/v1/events") {
		if !strings.Contains(r, "fieldSelector=") {
			t.Errorf("events listed without a field selector: %s", r)
		}
	}
}

// everyNamespaceReads splits the requests for every namespace's apps resource r (deployments,
// statefulsets, daemonsets) into Tables without objects, lists by name, and whole lists.
func everyNamespaceReads(log *requestLog, r string) (tables, named, whole []string) {
	for _, req := range log.matching(http.MethodGet, "/apis/apps/v1/"+r) {
		switch {
		case strings.Contains(req, "includeObject=None"):
			tables = append(tables, req)
		case strings.Contains(req, "fieldSelector=metadata.name"):
			named = append(named, req)
		default:
			whole = append(whole, req)
		}
	}
	return tables, named, whole
}
