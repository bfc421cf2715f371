package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// collectEnv is one control plane shared by the collector's cases, each case in namespaces of
// its own: etcd, kube-apiserver with the CRDs, and kwok serving the kubelet API for the
// kruise-manager leader's log (an empty log file).
type collectEnv struct {
	k  *krEnv
	c  *testcluster.Cluster
	cs kubernetes.Interface
}

// fastRetry retries as the collector does, without the waits.
var fastRetry = retry.Policy{Base: time.Microsecond, Max: time.Microsecond}

// TestCollectOnTheAPIServer runs the collector in process against a real apiserver: what it
// reads, what it records when RBAC denies a read, and how it rides out a faulty network.
func TestCollectOnTheAPIServer(t *testing.T) {
	k := startKruiseClusterLogs(t, krLogsNamespace, capiNamespace)
	k.node(t, krKwokNode, true)
	e := &collectEnv{k: k, c: k.c, cs: k.cs}
	t.Run("FailsOnlyWithoutAServerVersion", e.failsOnlyWithoutAServerVersion)
	t.Run("RecordsForbiddenListsAndReadsTheRest", e.recordsForbiddenListsAndReadsTheRest)
	// Before NamesAnUndecodableSidecarSet.
	t.Run("ReadsOpenKruiseAndOptionalAPIs", e.readsOpenKruiseAndOptionalAPIs)
	t.Run("RecordsAPodStreamThatBreaks", e.recordsAPodStreamThatBreaks)
	t.Run("PodListRidesOutFaults", e.podListRidesOutFaults)
	t.Run("PodListGivesUp", e.podListGivesUp)
	t.Run("ControllersListNotNarrowedByAFault", e.controllersListNotNarrowedByAFault)
	t.Run("DoesNotReadTheLogOfAnUnboundLeader", e.doesNotReadTheLogOfAnUnboundLeader)
	t.Run("ListsDeploymentsPerNamespaceWhenForbiddenClusterWide", e.listsDeploymentsPerNamespaceWhenForbiddenClusterWide)
	t.Run("DeletedServicesWholeAndOnce", e.deletedServicesWholeAndOnce)
	t.Run("PersistentVolumesWholeAndOnce", e.persistentVolumesWholeAndOnce)
	t.Run("DeletedAttachments", e.deletedAttachments)
	t.Run("ReadsPodsAndCandidates", e.readsPodsAndCandidates)
	t.Run("CarriesOutDeclaredReads", e.carriesOutDeclaredReads)
	t.Run("RecordsFailedCandidateReads", e.recordsFailedCandidateReads)
	t.Run("EventsFilteredByTheServerOrHere", e.eventsFilteredByTheServerOrHere)
	t.Run("ReadsTheClusterAPILeaderLogBounded", e.readsTheClusterAPILeaderLogBounded)
	t.Run("NamesAnUndecodableSidecarSet", e.namesAnUndecodableSidecarSet)
	// After the kruise-manager in kruise-system exists.
	t.Run("ReadsTheLeaderLeaseTwice", e.readsTheLeaderLeaseTwice)
	// After the kruise-manager and the Cluster API controller are at their places.
	t.Run("ReadsOnlyTheWorkloadsSearchedFor", e.readsOnlyTheWorkloadsSearchedFor)
	t.Run("FindsAControllerAwayFromItsPlaceByImage", e.findsAControllerAwayFromItsPlaceByImage)
	// Makes an aggregated API unavailable while it runs.
	t.Run("CollectsObjectsBeingDeleted", e.collectsObjectsBeingDeleted)
	// Deletes the Cluster API CRDs: last.
	t.Run("SkipsTheClusterAPILogWithoutClusterAPI", e.skipsTheClusterAPILogWithoutClusterAPI)
}

// namespace creates a namespace for one case.
func (e *collectEnv) namespace(t *testing.T, name string) string {
	t.Helper()
	createNamespace(t, e.c, name)
	return name
}

// collect runs the collector with clients, failing the test if it fails.
func collectWith(t *testing.T, clients collect.Clients, opts collect.Options, inputs ...snapshot.Input) *snapshot.Snapshot {
	t.Helper()
	if opts.Retry == (retry.Policy{}) {
		opts.Retry = fastRetry
	}
	s, err := collect.Collect(t.Context(), clients, opts, inputs)
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return s
}

// unread returns the snapshot's unread inputs as text.
func unread(s *snapshot.Snapshot) map[snapshot.Input]string {
	out := map[snapshot.Input]string{}
	for in, err := range s.Unread {
		out[in] = err.Error()
	}
	return out
}

// as is the admin's config impersonating user, whom only RBAC grants anything.
func (e *collectEnv) as(user string) *rest.Config {
	cfg := e.c.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// grant binds user to a ClusterRole of rules, cluster-wide when ns is "", else in ns only.
func (e *collectEnv) grant(t *testing.T, user, ns string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	name := fmt.Sprintf("%s-%s", user, ns)
	if _, err := e.cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	var err error
	if ns == "" {
		_, err = e.cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
	} else {
		_, err = e.cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: ref, Subjects: subjects}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (e *collectEnv) failsOnlyWithoutAServerVersion(t *testing.T) {
	_, clients := faultyClients(t, e.c.RESTConfig(), &faultRule{Method: http.MethodGet, Path: regexp.MustCompile(`^/version$`), Err: refused})
	opts := collect.Options{Scope: snapshot.Scope{AllNamespaces: true}, Retry: fastRetry}
	if _, err := collect.Collect(t.Context(), clients, opts, []snapshot.Input{snapshot.InputNodes}); err == nil ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Collect error = %v, want the server version's", err)
	}
}

// A user the RBAC authorizer denies nodes and pods still has the namespaces and node leases
// read; in a namespace's scope, the namespace is read with a GET, which is denied too.
func (e *collectEnv) recordsForbiddenListsAndReadsTheRest(t *testing.T) {
	ctx := t.Context()
	ns := e.namespace(t, "forbidden-reads")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "forbidden-reads-node"}}
	if _, err := e.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The kubelet's heartbeat Lease in kube-node-lease, named after its node (kubelet's
	// nodelease controller, pkg/kubelet/kubelet.go NewMainKubelet).
	holder := node.Name
	if _, err := e.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node.Name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := "forbidden-reader"
	e.grant(t, user, "", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list"}})
	e.grant(t, user, corev1.NamespaceNodeLease, rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
		Verbs: []string{"get", "list"}})
	_, clients := faultyClients(t, e.as(user))

	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}},
		snapshot.InputPods, snapshot.InputNodes, snapshot.InputNodeLeases, snapshot.InputNamespaces)
	want := map[snapshot.Input]string{snapshot.InputNodes: "forbidden: list nodes", snapshot.InputPods: "forbidden: list pods"}
	if got := unread(s); !reflect.DeepEqual(got, want) {
		t.Errorf("unread = %v, want %v", got, want)
	}
	hasNS := slices.ContainsFunc(s.Namespaces, func(n *corev1.Namespace) bool { return n.Name == ns })
	hasLease := slices.ContainsFunc(s.NodeLeases, func(l *coordinationv1.Lease) bool { return l.Name == node.Name })
	if len(s.Nodes) != 0 || len(s.Pods) != 0 || !hasNS || !hasLease {
		t.Errorf("read %d nodes, %d pods, namespace %s %v, node lease %v; want no nodes or pods, the namespace and the lease",
			len(s.Nodes), len(s.Pods), ns, hasNS, hasLease)
	}

	s = collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: ns}}, snapshot.InputNamespaces)
	if got := unread(s)[snapshot.InputNamespaces]; got != "forbidden: get namespaces/"+ns {
		t.Errorf("unread namespaces = %q", got)
	}
}

// sevenPods creates pods web-0 to web-6 in ns.
func (e *collectEnv) sevenPods(t *testing.T, ns string) []string {
	t.Helper()
	var names []string
	for i := range 7 {
		p := simplePod(ns, fmt.Sprintf("web-%d", i))
		if _, err := e.cs.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, p.Name)
	}
	return names
}

func podNames(s *snapshot.Snapshot) []string {
	var out []string
	for _, p := range s.Pods {
		out = append(out, p.Name)
	}
	return out
}

// podsPath matches the LIST of ns's pods.
func podsPath(ns string) *regexp.Regexp {
	return regexp.MustCompile("^/api/v1/namespaces/" + regexp.QuoteMeta(ns) + "/pods$")
}

// A pod list whose body breaks on every try is recorded as unread, with the decoding error; the
// other inputs are read.
func (e *collectEnv) recordsAPodStreamThatBreaks(t *testing.T) {
	ns := e.namespace(t, "pod-stream-breaks")
	e.sevenPods(t, ns)
	_, clients := faultyClients(t, e.c.RESTConfig(), &faultRule{Method: http.MethodGet, Path: podsPath(ns), CutLast: 2})
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: ns}}, snapshot.InputPods, snapshot.InputNodes)
	if got := unread(s); len(got) != 1 || !strings.HasPrefix(got[snapshot.InputPods], "list pods: decode pod list: ") {
		t.Errorf("unread = %v, want the pod list's decoding error only", got)
	}
}

// continuedAfter returns the name of the pod a continue token resumes after, "" for none: the
// apiserver's token is base64 JSON whose start key is the last key returned plus a NUL
// (apiserver/pkg/storage/continue.go, EncodeContinue).
func continuedAfter(t *testing.T, token string) string {
	t.Helper()
	if token == "" {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		t.Fatalf("continue token %q: %v", token, err)
	}
	var c struct {
		Start string `json:"start"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("continue token %q: %v", raw, err)
	}
	key := strings.TrimSuffix(c.Start, "\x00")
	return key[strings.LastIndex(key, "/")+1:]
}

// The pod list rides out each fault and reads every pod exactly once; the requests show where
// each page resumed, in order.
func (e *collectEnv) podListRidesOutFaults(t *testing.T) {
	ns := e.namespace(t, "pod-list-faults")
	seven := e.sevenPods(t, ns)
	scope := snapshot.Scope{Namespace: ns}
	paged := collect.Options{Scope: scope, PageSize: 3}
	unpaged := collect.Options{Scope: scope}
	fault := func(skip int, r faultRule) []*faultRule {
		r.Method, r.Path, r.Skip, r.Times = http.MethodGet, podsPath(ns), skip, 1
		return []*faultRule{&r}
	}
	for _, tc := range []struct {
		name   string
		opts   collect.Options
		faults []*faultRule
		// after are the pods each request resumed after ("" the first page).
		after []string
		// abandoned, when not 0, is the index in after of a pipelined request that the fault
		// abandons: it may be cancelled before it is sent.
		abandoned int
	}{
		{"nothing fails: no extra request", paged, nil, []string{"", "web-2", "web-5"}, 0},
		{"nothing fails, unpaged", unpaged, nil, []string{""}, 0},
		{"500 on the first page", paged, fault(0, faultRule{Code: 500}), []string{"", "", "web-2", "web-5"}, 0},
		// The second page is cut inside its last pod, after the third page was asked for: that
		// request is dropped, the second page asked for again and its first two pods skipped.
		{"second page cut short", paged, fault(1, faultRule{CutLast: 3}), []string{"", "web-2", "web-5", "web-2", "web-5"}, 2},
		{"first page cut short starts over", paged, fault(0, faultRule{CutLast: 3}), []string{"", "web-2", "", "web-2", "web-5"}, 1},
		{"unpaged list cut short starts over", unpaged, fault(0, faultRule{CutLast: 3}), []string{"", ""}, 0},
		{"connection reset on a later page", paged, fault(2, faultRule{Err: reset}), []string{"", "web-2", "web-5", "web-5"}, 0},
		{"429 on a later page", paged, fault(2, faultRule{Code: http.StatusTooManyRequests}), []string{"", "web-2", "web-5", "web-5"}, 0},
		{"expired continue token starts over", paged, fault(1, faultRule{Code: http.StatusGone}), []string{"", "web-2", "", "web-2", "web-5"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, clients := faultyClients(t, e.c.RESTConfig(), tc.faults...)
			s := collectWith(t, clients, tc.opts, snapshot.InputPods)
			if got := podNames(s); !reflect.DeepEqual(got, seven) || len(s.Unread) != 0 {
				t.Errorf("pods %v, unread %v; want each of the seven once and nothing unread", got, unread(s))
			}
			var after []string
			for _, r := range log.matching(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods") {
				_, q, _ := strings.Cut(r, "?")
				v, err := url.ParseQuery(q)
				if err != nil {
					t.Fatal(err)
				}
				after = append(after, continuedAfter(t, v.Get("continue")))
			}
			if tc.abandoned > 0 && len(after) == len(tc.after)-1 {
				after = slices.Insert(after, tc.abandoned, tc.after[tc.abandoned])
			}
			if !reflect.DeepEqual(after, tc.after) {
				t.Errorf("pages resumed after %q, want %q", after, tc.after)
			}
		})
	}
}

func (e *collectEnv) podListGivesUp(t *testing.T) {
	ns := e.namespace(t, "pod-list-gives-up")
	e.sevenPods(t, ns)
	opts := collect.Options{Scope: snapshot.Scope{Namespace: ns}}
	log, clients := faultyClients(t, e.c.RESTConfig(), &faultRule{Method: http.MethodGet, Path: podsPath(ns), Code: 500})
	s := collectWith(t, clients, opts, snapshot.InputPods)
	lists := log.matching(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods")
	err, _ := s.UnreadInput(snapshot.InputPods)
	if err == nil || !strings.Contains(err.Error(), "tried 5 times") || err.Limit || !err.Blinds() || len(lists) != 5 {
		t.Errorf("unread pods %v after %d requests; want a failure (not a denial) after 5", err, len(lists))
	}

	// A denial is final: one request, and the error says it is a denial. The user is granted
	// nothing, so the RBAC authorizer denies the list.
	log, clients = faultyClients(t, e.as("granted-nothing"))
	s = collectWith(t, clients, opts, snapshot.InputPods)
	lists = log.matching(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods")
	if err, _ := s.UnreadInput(snapshot.InputPods); err == nil || !err.Limit || err.Blinds() || len(lists) != 1 {
		t.Errorf("unread pods %v after %d requests; want a denial after 1", err, len(lists))
	}
}

// A 500 on the cluster-wide Deployments list is retried, never taken for a denial that narrows
// the search to a few namespaces; one that persists is an error, not a narrower read.
func (e *collectEnv) controllersListNotNarrowedByAFault(t *testing.T) {
	ns := e.namespace(t, "controllers-fault")
	one := int32(1)
	labels := map[string]string{"app": "janitor"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "janitor"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: simplePod(ns, "").Spec}}}
	if _, err := e.cs.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		times  int
		unread bool
	}{{"once", 1, false}, {"always", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			log, clients := faultyClients(t, e.c.RESTConfig(),
				&faultRule{Method: http.MethodGet, Path: regexp.MustCompile(`^/apis/apps/v1/deployments$`), Times: tc.times, Code: 500})
			s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, snapshot.InputControllers)
			if narrowed := log.matching(http.MethodGet, "/apis/apps/v1/namespaces/"+ns+"/deployments"); len(narrowed) != 0 {
				t.Fatalf("deployments listed in a namespace %v: the read was narrowed", narrowed)
			}
			if _, limited := s.Limits[snapshot.InputControllers]; limited {
				t.Errorf("a fault is noted as a limit: %q", s.Limits[snapshot.InputControllers])
			}
			err, _ := s.UnreadInput(snapshot.InputControllers)
			if tc.unread != (err != nil) || (err != nil && err.Limit) {
				t.Errorf("unread controllers = %v", err)
			}
			read := slices.ContainsFunc(s.Deployments, func(d *appsv1.Deployment) bool { return d.Namespace == ns && d.Name == "janitor" })
			if !tc.unread && !read {
				t.Errorf("%d deployments read, none of them %s/janitor", len(s.Deployments), ns)
			}
		})
	}
}

// managerIn is the settings of a scan told the kruise-manager runs in ns (--kruise-namespace):
// the shared cluster has several.
func managerIn(ns string) snapshot.Settings {
	st := snapshot.DefaultSettings()
	st.KruiseNamespace = ns
	return st
}

// managerDeployment creates a kruise-manager Deployment as its Helm chart does, one replica of
// the manager container running image, and returns its pod spec.
func (e *collectEnv) managerDeployment(t *testing.T, ns, name, image string) corev1.PodSpec {
	t.Helper()
	labels := map[string]string{"control-plane": "controller-manager"}
	one := int32(1)
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: kruise.ManagerContainer, Image: image}}}
	if _, err := e.cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	return spec
}

// A leader Lease naming a pod that no node runs: its log cannot be read, and the collector does
// not ask the apiserver for it.
func (e *collectEnv) doesNotReadTheLogOfAnUnboundLeader(t *testing.T) {
	ctx := t.Context()
	ns := e.namespace(t, "kruise-unbound")
	spec := e.managerDeployment(t, ns, "kruise-controller-manager", "openkruise/kruise-manager:v1.8.0")
	labels := map[string]string{"control-plane": "controller-manager"}
	pod, err := e.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kruise-controller-manager-7d9", Labels: labels},
		Spec: spec}, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	// The scheduler's verdict on a pod it cannot place, through the status subresource
	// (pkg/scheduler/schedule_one.go, handleSchedulingFailure).
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available", LastTransitionTime: metav1.Now()}}
	if _, err := e.cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{FieldManager: "kube-scheduler"}); err != nil {
		t.Fatal(err)
	}
	holder := pod.Name + "_4b2c"
	if _, err := e.cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: kruise.DefaultLeaderElectionID},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{FieldManager: "manager"}); err != nil {
		t.Fatal(err)
	}
	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}, Settings: managerIn(ns)},
		snapshot.InputControllers, snapshot.InputControllerLogs)
	if got := unread(s)[snapshot.InputControllerLogs]; !strings.Contains(got, "not bound to a node") {
		t.Errorf("unread controller-logs = %q", got)
	}
	if got := log.matching(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+pod.Name+"/log"); len(got) != 0 {
		t.Errorf("the unbound leader's log was asked for: %v", got)
	}
}

// A user bound to the shipped scan roles in a few namespaces only: the Deployments are listed
// in each place a known controller runs, the partial search is stated, and the kruise-manager
// leader's log is read.
func (e *collectEnv) listsDeploymentsPerNamespaceWhenForbiddenClusterWide(t *testing.T) {
	leader := e.k.manager(t, krLogsNamespace, "v1.8.0", nil, krKwokNode, true)
	ns := e.namespace(t, "shop-scoped")
	searched := []string{krLogsNamespace, ns, "argocd", "capi-system", "flux-system"}
	for _, n := range searched[2:] {
		e.namespace(t, n)
	}
	if out, errOut, code := runKubectl(t, e.c.Kubeconfig, "apply", "-f", filepath.Join(repoRoot(t), "deploy", "rbac", "scan.yaml")); code != 0 {
		t.Fatalf("kubectl apply scan.yaml: exit %d\n%s\n%s", code, out, errOut)
	}
	const user = "scan-in-namespaces"
	for _, n := range searched {
		for _, role := range []string{"workloaddoctor-scan", "workloaddoctor-scan-logs"} {
			if _, err := e.cs.RbacV1().RoleBindings(n).Create(t.Context(), &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role + "-" + user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	log, clients := faultyClients(t, e.as(user))
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: ns}}, snapshot.InputControllers, snapshot.InputControllerLogs)

	var lists []string
	for _, r := range log.all() {
		m, rest, _ := strings.Cut(r, " ")
		p, _, _ := strings.Cut(rest, "?")
		if m != http.MethodGet {
			continue
		}
		if p == "/apis/apps/v1/deployments" {
			lists = append(lists, "")
		} else if n, ok := strings.CutPrefix(p, "/apis/apps/v1/namespaces/"); ok && strings.HasSuffix(n, "/deployments") {
			lists = append(lists, strings.TrimSuffix(n, "/deployments"))
		}
	}
	// The kruise-manager's namespace, kube-system, the scan's namespace, then the places the
	// known finalizer owners run by default.
	if want := []string{"", krLogsNamespace, "kube-system", ns, "argocd", "capi-system", "flux-system"}; !reflect.DeepEqual(lists, want) {
		t.Errorf("deployments listed in %q, want %q", lists, want)
	}
	// A partial search is a coverage note naming what was searched, never silent.
	if !reflect.DeepEqual(s.ControllerNamespaces, searched) {
		t.Errorf("ControllerNamespaces = %q, want %q", s.ControllerNamespaces, searched)
	}
	if note := s.Limits[snapshot.InputControllers]; !strings.Contains(note, "searched only in namespaces "+strings.Join(searched, ", ")) ||
		!strings.Contains(note, "forbidden: list apps/deployments in all namespaces") || !strings.Contains(note, "no owner is reported missing") ||
		!strings.Contains(note, "being deleted elsewhere") {
		t.Errorf("Limits note = %q", note)
	}
	// kube-system is searched for the workloads of controllers that run there; the user may
	// list none of them.
	want := map[snapshot.Input]string{snapshot.InputControllers: "forbidden: list apps/deployments in kube-system; " +
		"forbidden: list apps/statefulsets in kube-system; forbidden: list apps/daemonsets in kube-system"}
	if got := unread(s); !reflect.DeepEqual(got, want) {
		t.Errorf("unread = %v, want %v", got, want)
	}
	if len(s.Deployments) != 1 || len(s.Leases) != 1 || len(s.ControllerPods) != 1 {
		t.Errorf("read %d deployments, %d leases, %d controller pods; want one each", len(s.Deployments), len(s.Leases), len(s.ControllerPods))
	}
	// kwok serves the leader's log from an empty file: the log is read, nothing kept.
	if got, ok := s.Logs[krLogsNamespace+"/"+leader.Name]; !ok || got != "" {
		t.Errorf("logs = %q, want the leader's read and empty", s.Logs)
	}
}

// The kruise-manager's leader Lease is read twice, apart, to tell a live leader from a stale
// Lease; a manager without a Lease (no leader took it) has nothing read again and nothing unread.
// Runs after ListsDeploymentsPerNamespaceWhenForbiddenClusterWide made the manager in
// kruise-system.
func (e *collectEnv) readsTheLeaderLeaseTwice(t *testing.T) {
	ns := e.namespace(t, "lease-reads")
	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: ns}}, snapshot.InputControllers)
	reads := s.LeaseReads[krLogsNamespace+"/"+kruise.DefaultLeaderElectionID]
	if len(reads) != 2 || len(s.Leases) != 1 {
		t.Fatalf("%d reads of the leader Lease and %d Leases in the snapshot, want 2 and 1", len(reads), len(s.Leases))
	}
	if reads[1].Elapsed < reads[0].Elapsed {
		t.Errorf("the second read (%s) is before the first (%s)", reads[1].Elapsed, reads[0].Elapsed)
	}
	if gets := log.matching(http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/"+krLogsNamespace+"/leases/"+kruise.DefaultLeaderElectionID); len(gets) != 2 {
		t.Errorf("GETs of the Lease %v, want 2", gets)
	}
	if len(unread(s)) != 0 {
		t.Errorf("unread = %v", unread(s))
	}

	// No Lease: a manager whose leader never took one, in a namespace of its own.
	bare := e.namespace(t, "kruise-no-lease")
	e.managerDeployment(t, bare, "kruise-controller-manager", "openkruise/kruise-manager:v1.8.0")
	log, clients = faultyClients(t, e.c.RESTConfig())
	s = collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}, Settings: managerIn(bare)}, snapshot.InputControllers)
	if len(s.LeaseReads) != 0 || len(s.Leases) != 0 || len(unread(s)) != 0 {
		t.Errorf("without a Lease: reads %v, leases %d, unread %v", s.LeaseReads, len(s.Leases), unread(s))
	}
	if gets := log.matching(http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/"+bare+"/leases/"+kruise.DefaultLeaderElectionID); len(gets) != 1 {
		t.Errorf("the missing Lease was asked for %d times, want once", len(gets))
	}
}

// deletedObjectNames names the objects input's objects whose name starts with prefix (the shared
// cluster's other cases have their own) "Kind namespace/name".
func deletedObjectNames(s *snapshot.Snapshot, prefix string) []string {
	var out []string
	for _, o := range s.Objects {
		if strings.HasPrefix(o.Meta.Name, prefix) {
			out = append(out, o.Kind+" "+o.Meta.Namespace+"/"+o.Meta.Name)
		}
	}
	slices.Sort(out)
	return out
}

// deleteObject deletes an object a finalizer holds: the apiserver sets its deletionTimestamp.
func deleteObject(t *testing.T, del func(context.Context, string, metav1.DeleteOptions) error, name string) {
	t.Helper()
	if err := del(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
}

// Services are listed whole once; only those being deleted are kept, and the objects input takes
// them from there.
func (e *collectEnv) deletedServicesWholeAndOnce(t *testing.T) {
	ctx := t.Context()
	ns := e.namespace(t, "svc-deleted")
	svcs := e.cs.CoreV1().Services(ns)
	port := []corev1.ServicePort{{Port: 80}}
	// The cloud provider's service controller adds its cleanup finalizer to a LoadBalancer
	// Service (k8s.io/cloud-provider controllers/service/controller.go, addFinalizer).
	if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc-web", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: port}}, metav1.CreateOptions{FieldManager: "service-controller"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc-api"}, Spec: corev1.ServiceSpec{Ports: port}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteObject(t, svcs.Delete, "svc-web")
	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, snapshot.InputObjects, snapshot.InputDeletedServices)
	var deleted []*corev1.Service
	for _, d := range s.DeletedServices {
		if d.Namespace == ns {
			deleted = append(deleted, d)
		}
	}
	if len(deleted) != 1 || deleted[0].Name != "svc-web" || deleted[0].Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Fatalf("deleted services = %v, want svc-web, whole", deleted)
	}
	if lists := log.matching(http.MethodGet, "/api/v1/services"); len(lists) != 1 {
		t.Errorf("services listed %v, want once", lists)
	}
	if got, want := deletedObjectNames(s, "svc-"), []string{"Service " + ns + "/svc-web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}
}

// PVs are read whole once, by their own input; the objects input takes the deleted ones from it
// rather than listing them again metadata-only.
func (e *collectEnv) persistentVolumesWholeAndOnce(t *testing.T) {
	ctx := t.Context()
	pvs := e.cs.CoreV1().PersistentVolumes()
	pv := func(name string, claim *corev1.ObjectReference, phase corev1.PersistentVolumePhase) {
		t.Helper()
		got, err := pvs.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, ClaimRef: claim,
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The PV controller writes the phase (pkg/controller/volume/persistentvolume/pv_controller.go,
		// updateVolumePhase).
		got.Status.Phase = phase
		if _, err := pvs.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			t.Fatal(err)
		}
	}
	pv("pvcase-data", &corev1.ObjectReference{Namespace: "shop", Name: "data"}, corev1.VolumeBound)
	pv("pvcase-free", nil, corev1.VolumeAvailable)
	// The StorageObjectInUseProtection admission plugin gave both the kubernetes.io/pv-protection
	// finalizer (plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go), which
	// holds the deleted one until kube-controller-manager's pv-protection controller drops it.
	deleteObject(t, pvs.Delete, "pvcase-data")

	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, snapshot.InputObjects, snapshot.InputPersistentVolumes)
	var claimed, mine int
	for _, p := range s.PersistentVolumes {
		if strings.HasPrefix(p.Name, "pvcase-") {
			mine++
			if p.Spec.ClaimRef != nil {
				claimed++
			}
		}
	}
	if mine != 2 || claimed != 1 {
		t.Fatalf("persistent volumes = %v, want both, whole", s.PersistentVolumes)
	}
	if lists := log.matching(http.MethodGet, "/api/v1/persistentvolumes"); len(lists) != 1 {
		t.Errorf("persistentvolumes listed %v, want once", lists)
	}
	if got, want := deletedObjectNames(s, "pvcase-"), []string{"PersistentVolume /pvcase-data"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}

	ns := e.namespace(t, "pv-scoped")
	s = collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: ns}}, snapshot.InputObjects, snapshot.InputPersistentVolumes)
	if len(s.PersistentVolumes) != 0 {
		t.Errorf("a scan of one namespace read %d PVs, want none", len(s.PersistentVolumes))
	}
}

// VolumeAttachments are listed whole once, those being deleted kept; a scan of one namespace
// reads none (they are cluster-scoped).
func (e *collectEnv) deletedAttachments(t *testing.T) {
	ctx := t.Context()
	vas := e.cs.StorageV1().VolumeAttachments()
	pv := "pv-data"
	// The external-attacher adds its finalizer before it attaches (kubernetes-csi
	// external-attacher pkg/controller/csi_handler.go, addVAFinalizer).
	if _, err := vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "vacase-1",
		Finalizers: []string{"external-attacher/ebs-csi-aws-com"}},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: "node-a", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}},
		metav1.CreateOptions{FieldManager: "csi-attacher"}); err != nil {
		t.Fatal(err)
	}
	if _, err := vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "vacase-2"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: "node-a", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}}},
		metav1.CreateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	deleteObject(t, vas.Delete, "vacase-1")

	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, snapshot.InputObjects, snapshot.InputDeletedAttachments)
	var deleted []*storagev1.VolumeAttachment
	for _, va := range s.DeletedAttachments {
		if strings.HasPrefix(va.Name, "vacase-") {
			deleted = append(deleted, va)
		}
	}
	if len(deleted) != 1 || deleted[0].Spec.Attacher != "ebs.csi.aws.com" {
		t.Fatalf("deleted attachments = %v, want vacase-1, whole", deleted)
	}
	if lists := log.matching(http.MethodGet, "/apis/storage.k8s.io/v1/volumeattachments"); len(lists) != 1 {
		t.Errorf("volumeattachments listed %v, want once", lists)
	}
	if got, want := deletedObjectNames(s, "vacase-"), []string{"VolumeAttachment /vacase-1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}
	ns := e.namespace(t, "va-scoped")
	if s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: ns}}, snapshot.InputDeletedAttachments); len(s.DeletedAttachments) != 0 {
		t.Errorf("a scan of one namespace read %d attachments", len(s.DeletedAttachments))
	}
}

// podCase creates, in ns, 6 pods of a workload "web", 4 of "api", a pod "lone" and a pod "gone",
// each with an annotation the checks read and one they do not, the kubelet's status written
// through the status subresource. It returns the candidates (web, lone and gone) and deletes
// gone, which the bulk list has read, when the collector asks for the reads.
func (e *collectEnv) podCase(t *testing.T, ns string) (cands func(*snapshot.Snapshot) []types.UID, reads func() int) {
	t.Helper()
	ctx := t.Context()
	pods := e.cs.CoreV1().Pods(ns)
	create := func(name string, labels map[string]string) {
		t.Helper()
		p := simplePod(ns, name)
		p.Labels = labels
		p.Annotations = map[string]string{"example.com/read": "yes", "cni/state": "big"}
		got, err := pods.Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if err != nil {
			t.Fatal(err)
		}
		got.Status.Phase = corev1.PodPending
		if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		create(fmt.Sprintf("web-%d", i), map[string]string{"app": "web"})
	}
	for i := range 4 {
		create(fmt.Sprintf("api-%d", i), map[string]string{"app": "api"})
	}
	create("lone", nil)
	create("gone", nil)
	declared := 0
	return func(s *snapshot.Snapshot) []types.UID {
			if declared++; declared == 1 {
				if err := pods.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
					t.Errorf("delete gone: %v", err)
				}
				// The collector's GET may be served from the watch cache; wait until it has seen
				// the deletion, else it may still answer with the pod.
				eventually(t, 30*time.Second, "the watch cache to drop gone", func(ctx context.Context) (bool, error) {
					_, err := pods.Get(ctx, "gone", metav1.GetOptions{ResourceVersion: "0"})
					return apierrors.IsNotFound(err), nil
				})
			}
			var out []types.UID
			for _, p := range s.Pods {
				if p.Namespace == ns && (p.Labels["app"] == "web" || p.Name == "lone" || p.Name == "gone") {
					out = append(out, p.UID)
				}
			}
			return out
		}, func() int {
			return declared
		}
}

// onlyMetadataFields reports whether p keeps managedFields, each entry with only its metadata
// fields, and the labels' among them when p has labels.
func onlyMetadataFields(t *testing.T, p *corev1.Pod) bool {
	t.Helper()
	labels := false
	for _, m := range p.ManagedFields {
		if m.FieldsV1 == nil {
			continue
		}
		var set map[string]json.RawMessage
		if err := json.Unmarshal(m.FieldsV1.Raw, &set); err != nil {
			t.Fatal(err)
		}
		for k := range set {
			if k != "f:metadata" {
				return false
			}
		}
		labels = labels || strings.Contains(string(set["f:metadata"]), `"f:labels"`)
	}
	return len(p.ManagedFields) > 0 && labels == (len(p.Labels) > 0)
}

// The bulk list reads every pod metadata-only, keeping only the annotations a check reads; the
// candidates are read in full (only their metadata field sets kept) with one LIST by label for
// the workload, at the bulk list's resourceVersion or newer, and a GET for each other.
func (e *collectEnv) readsPodsAndCandidates(t *testing.T) {
	for i, tc := range []struct {
		name     string
		json     bool
		pageSize int64
		// bulk and selected are how many requests the bulk list and the LIST of web take.
		bulk, selected int
	}{
		{name: "protobuf, one streamed response", bulk: 1, selected: 1},
		{name: "json, one streamed response", json: true, bulk: 1, selected: 1},
		{name: "protobuf, pages of 4", pageSize: 4, bulk: 3, selected: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := e.namespace(t, fmt.Sprintf("pods-and-candidates-%d", i))
			cands, _ := e.podCase(t, ns)
			log := &requestLog{}
			cfg := e.c.RESTConfig()
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log })
			newClients := scan.Clients
			if tc.json {
				newClients = scan.JSONClients
			}
			clients, err := newClients(cfg)
			if err != nil {
				t.Fatal(err)
			}
			opts := collect.Options{Scope: snapshot.Scope{Namespace: ns}, PageSize: tc.pageSize, PodAnnotations: []string{"example.com/read"},
				Reads: func(s *snapshot.Snapshot) snapshot.Reads {
					return snapshot.Reads{Pods: []snapshot.PodReads{{UIDs: cands(s)}}}
				}}
			s := collectWith(t, clients, opts, snapshot.InputPods)

			if len(s.Unread) != 0 {
				t.Errorf("unread = %v", unread(s))
			}
			if len(s.Pods) != 12 {
				t.Fatalf("%d pods listed, want 12", len(s.Pods))
			}
			for _, p := range s.Pods {
				if p.ManagedFields != nil || !reflect.DeepEqual(p.Annotations, map[string]string{"example.com/read": "yes"}) {
					t.Fatalf("listed pod %s keeps managedFields %v, annotations %v", p.Name, p.ManagedFields, p.Annotations)
				}
			}
			var full []string
			for _, p := range s.FullPods {
				full = append(full, p.Name)
				if !onlyMetadataFields(t, p) {
					t.Errorf("pod %s keeps field sets other than its metadata's: %v", p.Name, p.ManagedFields)
				}
			}
			slices.Sort(full)
			if want := []string{"lone", "web-0", "web-1", "web-2", "web-3", "web-4", "web-5"}; !reflect.DeepEqual(full, want) {
				t.Errorf("pods read in full = %v, want %v", full, want)
			}
			var bulk, selected []string
			for _, r := range log.matching(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods") {
				if strings.Contains(r, "labelSelector") {
					selected = append(selected, r)
				} else {
					bulk = append(bulk, r)
				}
			}
			limit := fmt.Sprintf("limit=%d", tc.pageSize)
			for _, r := range bulk {
				if tc.pageSize > 0 != strings.Contains(r, limit) {
					t.Errorf("bulk pod list request %s, want page size %d", r, tc.pageSize)
				}
			}
			if len(bulk) != tc.bulk {
				t.Errorf("bulk pod list requests = %q, want %d", bulk, tc.bulk)
			}
			for i, r := range selected {
				if !strings.Contains(r, "labelSelector=app%3Dweb") || (i == 0) != strings.Contains(r, "resourceVersionMatch=NotOlderThan") {
					t.Errorf("candidate list request %s: want web's pods at the bulk list's resourceVersion or newer, then its pages", r)
				}
			}
			if len(selected) != tc.selected {
				t.Errorf("candidate list requests = %q, want %d", selected, tc.selected)
			}
			if got := log.matching(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/gone"); len(got) != 1 {
				t.Errorf("GETs of gone = %v, want one, answered NotFound", got)
			}
		})
	}
}

// The checks' reads are declared once; the collector carries out the conditional ones itself as
// the reads before them make them due: a sample of web first, then the rest of web once the
// sample is read, and a revision once a pod it concerns is read.
func (e *collectEnv) carriesOutDeclaredReads(t *testing.T) {
	ns := e.namespace(t, "declared-reads")
	e.podCase(t, ns)
	// The StatefulSet controller's revision (pkg/controller/history/controller_history.go,
	// CreateControllerRevision).
	if _, err := e.cs.AppsV1().ControllerRevisions(ns).Create(t.Context(), &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
		Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 1}, metav1.CreateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	uid := func(s *snapshot.Snapshot, name string) types.UID {
		for _, p := range s.Pods {
			if p.Namespace == ns && p.Name == name {
				return p.UID
			}
		}
		t.Fatalf("pod %s not listed", name)
		return ""
	}
	read := func(s *snapshot.Snapshot, uid types.UID) bool { _, full := s.FullPod(uid); return full }
	declared := 0
	opts := collect.Options{Scope: snapshot.Scope{Namespace: ns}}
	opts.Reads = func(s *snapshot.Snapshot) snapshot.Reads {
		declared++
		var web []types.UID
		for i := range 6 {
			web = append(web, uid(s, fmt.Sprintf("web-%d", i)))
		}
		return snapshot.Reads{
			Pods: []snapshot.PodReads{{UIDs: []types.UID{uid(s, "lone")}},
				{UIDs: web[:1], All: web, Widen: func(s *snapshot.Snapshot) bool { return read(s, web[0]) }}},
			Revisions: []snapshot.RevisionReads{{Reads: []snapshot.RevisionRead{{Namespace: ns, Name: "web-1", Full: true}},
				When: func(s *snapshot.Snapshot) bool { return read(s, web[3]) }}},
		}
	}
	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, opts, snapshot.InputPods)
	if declared != 1 {
		t.Errorf("reads declared %d times, want once", declared)
	}
	var full []string
	for _, p := range s.FullPods {
		full = append(full, p.Name)
	}
	slices.Sort(full)
	if want := []string{"lone", "web-0", "web-1", "web-2", "web-3", "web-4", "web-5"}; !slices.Equal(full, want) {
		t.Errorf("pods read in full = %v, want %v", full, want)
	}
	if len(s.Revisions) != 1 || string(s.Revisions[0].Data.Raw) != `{}` {
		t.Errorf("revisions = %v, want web-1 in full", s.Revisions)
	}
	var gets []string
	for _, r := range log.all() {
		m, rest, _ := strings.Cut(r, " ")
		p, _, _ := strings.Cut(rest, "?")
		for _, kind := range []string{"/api/v1/namespaces/" + ns + "/pods/", "/apis/apps/v1/namespaces/" + ns + "/controllerrevisions/"} {
			if name, ok := strings.CutPrefix(p, kind); ok && m == http.MethodGet {
				gets = append(gets, name)
			}
		}
	}
	slices.Sort(gets)
	if want := []string{"lone", "web-0", "web-1"}; !slices.Equal(gets, want) {
		t.Errorf("GETs of pods and revisions = %v, want pods lone and web-0, revision web-1", gets)
	}
	if lists := log.matching(http.MethodGet, "/api/v1/namespaces/"+ns+"/pods", "labelSelector=app%3Dweb", "resourceVersionMatch=NotOlderThan"); len(lists) != 1 {
		t.Errorf("candidate lists = %v, want the rest of web in one", lists)
	}
}

// A user who may list pods but not get them: the candidates a LIST by label reads are read, the
// GETs are denied and recorded.
func (e *collectEnv) recordsFailedCandidateReads(t *testing.T) {
	ns := e.namespace(t, "candidates-denied")
	cands, _ := e.podCase(t, ns)
	const user = "pod-lister"
	e.grant(t, user, ns, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}})
	_, clients := faultyClients(t, e.as(user))
	opts := collect.Options{Scope: snapshot.Scope{Namespace: ns},
		Reads: func(s *snapshot.Snapshot) snapshot.Reads {
			return snapshot.Reads{Pods: []snapshot.PodReads{{UIDs: cands(s)}}}
		}}
	s := collectWith(t, clients, opts, snapshot.InputPods)
	if got := unread(s)[snapshot.InputPods]; got != "read candidate pods: forbidden: get pods" {
		t.Errorf("unread pods = %q", got)
	}
	if len(s.FullPods) != 6 {
		t.Errorf("%d pods read in full, want the 6 a LIST reads", len(s.FullPods))
	}
}

// Events are filtered by the apiserver with field selectors; when it refuses them (a 400, as an
// apiserver does for a field label it does not support), they are listed unfiltered and
// filtered here. Either way only the Warnings and the events about OpenKruise objects are kept,
// without managedFields.
func (e *collectEnv) eventsFilteredByTheServerOrHere(t *testing.T) {
	ns := e.namespace(t, "events-filtered")
	event := func(name, typ string, ref corev1.ObjectReference) {
		t.Helper()
		now := metav1.NewTime(time.Now())
		// The kubelet's event recorder (client-go tools/record) creates them.
		if _, err := e.cs.CoreV1().Events(ns).Create(t.Context(), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			InvolvedObject: ref, Type: typ, Reason: "Test", Message: name, Count: 1, FirstTimestamp: now, LastTimestamp: now,
			Source: corev1.EventSource{Component: "kubelet"}}, metav1.CreateOptions{FieldManager: "kubelet"}); err != nil {
			t.Fatal(err)
		}
	}
	podRef := corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "web-1"}
	event("warning", corev1.EventTypeWarning, podRef)
	event("normal", corev1.EventTypeNormal, podRef)
	event("cloneset", corev1.EventTypeNormal, corev1.ObjectReference{APIVersion: kruise.CloneSets.GroupVersion().String(), Kind: kruise.KindCloneSet,
		Namespace: ns, Name: "web"})
	path := "/api/v1/namespaces/" + ns + "/events"
	for _, rejects := range []bool{false, true} {
		t.Run(fmt.Sprintf("server rejects selectors %v", rejects), func(t *testing.T) {
			var rules []*faultRule
			if rejects {
				rules = append(rules, &faultRule{Method: http.MethodGet, Path: regexp.MustCompile("^" + regexp.QuoteMeta(path) + "$"),
					Query: "fieldSelector=", Code: http.StatusBadRequest})
			}
			log, clients := faultyClients(t, e.c.RESTConfig(), rules...)
			s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: ns}}, snapshot.InputEvents)

			var selectors []string
			for _, r := range log.matching(http.MethodGet, path) {
				_, q, _ := strings.Cut(r, "?")
				v, err := url.ParseQuery(q)
				if err != nil {
					t.Fatal(err)
				}
				// The requirements in a stable order: their order means nothing to the apiserver.
				reqs := strings.Split(v.Get("fieldSelector"), ",")
				slices.Sort(reqs)
				selectors = append(selectors, strings.Join(reqs, ","))
			}
			want := []string{"type=Warning", "involvedObject.apiVersion=apps.kruise.io/v1alpha1,type!=Warning",
				"involvedObject.apiVersion=apps.kruise.io/v1beta1,type!=Warning"}
			if rejects {
				want = []string{"type=Warning", ""}
			}
			if !reflect.DeepEqual(selectors, want) {
				t.Errorf("field selectors = %q, want %q", selectors, want)
			}
			var names []string
			for _, ev := range s.Events {
				names = append(names, ev.Name)
				if ev.ManagedFields != nil {
					t.Errorf("event %s keeps its managedFields", ev.Name)
				}
			}
			slices.Sort(names)
			if want := []string{"cloneset", "warning"}; !reflect.DeepEqual(names, want) || len(s.Unread) != 0 {
				t.Errorf("events %v, unread %v; want %v and nothing unread", names, unread(s), want)
			}
		})
	}
}

const capiNamespace = "capi-system"

// capiManager runs the Cluster API core controller as its release's
// infrastructure-components.yaml installs it (config/manager/manager.yaml: container "manager"),
// its leader pod on the kwok node (kwok serves its log, an empty file) and its leader Lease
// (controller-runtime's leader election, identity "<pod>_<uuid>").
func (e *collectEnv) capiManager(t *testing.T) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	ns := capiNamespace
	e.k.namespace(t, ns) // ListsDeploymentsPerNamespaceWhenForbiddenClusterWide may have made it
	labels := map[string]string{"cluster.x-k8s.io/provider": "cluster-api"}
	one := int32(1)
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.k8s.io/cluster-api/cluster-api-controller:v1.10.2"}}}
	if _, err := e.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "capi-controller-manager", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}},
		metav1.CreateOptions{FieldManager: "clusterctl"}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "capi-controller-manager-6d8f9c7b5-q2w7x", Labels: labels}, Spec: *spec.DeepCopy()}
	pod.Spec.NodeName = krKwokNode
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}
	pod, err := e.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "kwok to run the CAPI leader pod", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	holder := pod.Name + "_0b6a2c1e-5d1f-4a8e-9d3c-2f7e1b0a9c8d"
	if _, err := e.cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "controller-leader-election-capi"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{FieldManager: "manager"}); err != nil {
		t.Fatal(err)
	}
	return pod
}

// The Cluster API leader's log is read bounded (limitBytes, sinceSeconds, with timestamps);
// a user denied pods/log in capi-system has the read recorded as forbidden.
func (e *collectEnv) readsTheClusterAPILeaderLogBounded(t *testing.T) {
	leader := e.capiManager(t)
	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}},
		snapshot.InputControllers, snapshot.InputClusterAPI, snapshot.InputClusterAPILogs)
	if got := unread(s); len(got) != 0 {
		t.Fatalf("unread = %v", got)
	}
	l := s.ClusterAPILog
	if l == nil || l.Namespace != capiNamespace || l.Pod != leader.Name || l.Container != "manager" || len(l.Lines) != 0 {
		t.Fatalf("ClusterAPILog = %+v, want the leader's log read, nothing kept from the empty log", l)
	}
	reads := log.matching(http.MethodGet, "/api/v1/namespaces/"+capiNamespace+"/pods/"+leader.Name+"/log",
		"limitBytes=8388608", "sinceSeconds=1800", "timestamps=true", "container=manager")
	if len(reads) != 1 {
		t.Errorf("pods/log requests %v, want one bounded by limitBytes and sinceSeconds, with timestamps",
			log.matching(http.MethodGet, "/api/v1/namespaces/"+capiNamespace+"/pods/"+leader.Name+"/log"))
	}
	if s.ControllerNamespaces != nil {
		t.Errorf("ControllerNamespaces = %q, want nil: every namespace was listed", s.ControllerNamespaces)
	}

	// A user who may read every controller but not pods/log in capi-system.
	const user = "no-capi-logs"
	e.grant(t, user, "", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"clusters"}, Verbs: []string{"list"}})
	_, clients = faultyClients(t, e.as(user))
	s = collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, snapshot.InputControllers, snapshot.InputClusterAPILogs)
	if got := unread(s)[snapshot.InputClusterAPILogs]; got != "forbidden: get pods/log of "+capiNamespace+"/"+leader.Name {
		t.Errorf("unread = %v", unread(s))
	}
}

// A SidecarSet that does not decode is named in coverage; the others are read. The test CRD
// leaves spec schemaless (test/testdata/crds), so the apiserver stores a containers field of the
// wrong type.
func (e *collectEnv) namesAnUndecodableSidecarSet(t *testing.T) {
	res := e.k.dyn.Resource(kruise.SidecarSets)
	for name, containers := range map[string]any{"sscase-mesh": []any{map[string]any{"name": "proxy", "image": "envoy:1.31"}}, "sscase-broken": "proxy"} {
		ss := &unstructured.Unstructured{Object: map[string]any{"apiVersion": kruise.SidecarSets.GroupVersion().String(), "kind": "SidecarSet",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"containers": containers}}}
		if _, err := res.Create(t.Context(), ss, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
			t.Fatal(err)
		}
	}
	_, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, snapshot.InputSidecarSets)
	var read []string
	for _, ss := range s.SidecarSets {
		if strings.HasPrefix(ss.Name, "sscase-") {
			read = append(read, ss.Name)
		}
	}
	if !reflect.DeepEqual(read, []string{"sscase-mesh"}) {
		t.Errorf("read SidecarSets %v, want sscase-mesh", read)
	}
	if got := unread(s)[snapshot.InputSidecarSets]; !strings.Contains(got, "decode SidecarSet /sscase-broken") {
		t.Errorf("unread = %q, want the SidecarSet that did not decode named", got)
	}
}

// A one-namespace scope reads the workloads of other namespaces only as a check searches them:
// the apiserver's Tables of every namespace's Deployments, StatefulSets and DaemonSets (printed
// by pkg/printers/internalversion/printers.go: Name, Containers and Images among the columns)
// are matched by name, container name and image repository, and only the matching names are
// listed in full, by field selector; a searched namespace is listed whole. A second round's
// search (one verdict leading to another) is read too, and nothing is listed whole.
func (e *collectEnv) readsOnlyTheWorkloadsSearchedFor(t *testing.T) {
	scope := e.namespace(t, "ws-scope")
	a, b, c := e.namespace(t, "ws-a"), e.namespace(t, "ws-b"), e.namespace(t, "ws-c")
	ctx := t.Context()
	one := int32(1)
	template := func(app, container, image string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
		labels := map[string]string{"app": app}
		return &metav1.LabelSelector{MatchLabels: labels}, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar", Image: "registry.example/proxy:1.0"}, {Name: container, Image: image}}}}
	}
	deploy := func(ns, name, container, image string) {
		sel, tpl := template(name, container, image)
		if _, err := e.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: sel, Template: tpl}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sel, tpl := template("janitor", "janitor", "busybox:1.36")
	if _, err := e.cs.AppsV1().StatefulSets(b).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "janitor"},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, Selector: sel, Template: tpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sel, tpl = template("agent", "agent", "registry.example/infra/node-agent@sha256:"+strings.Repeat("a", 64))
	if _, err := e.cs.AppsV1().DaemonSets(c).Create(ctx, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tpl}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deploy(a, "tool", "operator", "registry.example/tool:2.1")
	deploy(a, "second", "web", "nginx:1.27")
	deploy(b, "unrelated", "web", "nginx:1.27")
	deploy(c, "janitor", "cleaner", "busybox:1.36")
	deploy(scope, "app", "web", "nginx:1.27")

	first := []snapshot.WorkloadQuery{{Name: "janitor"}, {Container: "operator"}, {ImageRepository: "node-agent"}, {Namespace: b}}
	rounds := 0
	log, clients := faultyClients(t, e.c.RESTConfig())
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: scope},
		Reads: func(*snapshot.Snapshot) snapshot.Reads { return snapshot.Reads{} },
		AsksWorkloads: func(s *snapshot.Snapshot) []snapshot.WorkloadQuery {
			rounds++
			s.AskWorkloads(first...)
			if rounds > 1 {
				s.AskWorkloads(snapshot.WorkloadQuery{Name: "second"})
			}
			return s.AskedWorkloads()
		}}, snapshot.InputPods, snapshot.InputControllers)
	if len(unread(s)) != 0 || !s.ControllersNear {
		t.Fatalf("unread = %v, near %v: the near read needs the kruise-manager and the Cluster API controller at their places", unread(s), s.ControllersNear)
	}
	var held []string
	for _, d := range s.Deployments {
		held = append(held, "Deployment "+d.Namespace+"/"+d.Name)
	}
	for _, st := range s.StatefulSets {
		held = append(held, "StatefulSet "+st.Namespace+"/"+st.Name)
	}
	for _, ds := range s.DaemonSets {
		held = append(held, "DaemonSet "+ds.Namespace+"/"+ds.Name)
	}
	held = slices.DeleteFunc(held, func(w string) bool { return !strings.Contains(w, " ws-") })
	slices.Sort(held)
	want := []string{"DaemonSet ws-c/agent", "Deployment ws-a/second", "Deployment ws-a/tool", "Deployment ws-b/unrelated",
		"Deployment ws-c/janitor", "Deployment ws-scope/app", "StatefulSet ws-b/janitor"}
	if !slices.Equal(held, want) {
		t.Errorf("workloads held %q, want %q", held, want)
	}
	if rounds != 3 {
		t.Errorf("checks asked %d times, want 3 rounds (a search, one more, none)", rounds)
	}
	for _, r := range []string{"deployments", "statefulsets", "daemonsets"} {
		if tables, _, whole := everyNamespaceReads(log, r); len(tables) != 2 || len(whole) > 0 {
			t.Errorf("%s of every namespace: %v as Tables, %v whole: want two Tables (one a round) and lists by name only", r, tables, whole)
		}
		if got := log.matching(http.MethodGet, "/apis/apps/v1/namespaces/"+b+"/"+r); len(got) != 1 {
			t.Errorf("%s of the namespace searched: %v, want one list", r, got)
		}
	}
	for r, names := range map[string][]string{"deployments": {"janitor", "tool", "second"}, "statefulsets": {"janitor"}, "daemonsets": {"agent"}} {
		for _, name := range names {
			if got := log.matching(http.MethodGet, "/apis/apps/v1/"+r, "fieldSelector=metadata.name%3D"+name); len(got) != 1 {
				t.Errorf("%s named %s listed %d times, want once", r, name, len(got))
			}
		}
	}
}

// A kruise-manager not at its configured place may run anywhere: a one-namespace scope then reads
// every Deployment running its image (found in Tables) instead of every namespace's workloads,
// and picks the manager a whole list would give (kruise.FindManager: the first by namespace and
// name).
func (e *collectEnv) findsAControllerAwayFromItsPlaceByImage(t *testing.T) {
	scope := e.namespace(t, "away-scope")
	elsewhere := e.namespace(t, "away-kruise")
	e.managerDeployment(t, elsewhere, "renamed-manager", "registry.example/openkruise/kruise-manager:v1.8.0")
	log, clients := faultyClients(t, e.c.RESTConfig())
	settings := managerIn(e.namespace(t, "away-configured")) // configured where it is not
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{Namespace: scope}, Settings: settings,
		Reads:         func(*snapshot.Snapshot) snapshot.Reads { return snapshot.Reads{} },
		AsksWorkloads: func(s *snapshot.Snapshot) []snapshot.WorkloadQuery { return s.AskedWorkloads() },
	}, snapshot.InputPods, snapshot.InputControllers)
	if len(unread(s)) != 0 || !s.ControllersNear {
		t.Fatalf("unread = %v, near %v", unread(s), s.ControllersNear)
	}
	all, err := e.cs.AppsV1().Deployments("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want, held []string
	var whole []*appsv1.Deployment
	for i := range all.Items {
		d := &all.Items[i]
		whole = append(whole, d)
		if slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
			return knowledge.ImageRepository(c.Image) == kruise.ManagerImageRepository
		}) {
			want = append(want, d.Namespace+"/"+d.Name)
		}
	}
	for _, d := range s.Deployments {
		// The near namespaces are listed whole: the scope's and those the controllers are
		// configured in.
		if !slices.Contains([]string{scope, settings.KruiseNamespace, knowledge.ClusterAPIManager.Namespace}, d.Namespace) {
			held = append(held, d.Namespace+"/"+d.Name)
		}
	}
	if !slices.Contains(want, elsewhere+"/renamed-manager") || !slices.Equal(held, want) {
		t.Errorf("Deployments held outside the near namespaces %q, want those running the manager's image %q", held, want)
	}
	got, full := kruise.FindManager(s.Deployments, settings.KruiseNamespace, settings.KruiseDeployment), kruise.FindManager(whole, settings.KruiseNamespace, settings.KruiseDeployment)
	if got == nil || full == nil || got.Deployment.Namespace != full.Deployment.Namespace || got.Deployment.Name != full.Deployment.Name {
		t.Errorf("manager found %v, want the one a whole list gives: %v", got, full)
	}
	for _, r := range []string{"deployments", "statefulsets", "daemonsets"} {
		if tables, _, whole := everyNamespaceReads(log, r); len(tables) != 1 || len(whole) > 0 {
			t.Errorf("%s of every namespace: %v as Tables, %v whole: want one Table and lists by name only", r, tables, whole)
		}
	}
}
