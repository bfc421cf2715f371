package e2e

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/why"
)

// whyOneObject: why on a healthy pod that kwok runs on a live node says nothing holds it (exit 0),
// whatever way its type is written; an object or a type that does not exist is one error line
// (exit 1); and what why reads is the pod's namespace, never a cluster-wide list of pods.
func (e *teEnv) whyOneObject(t *testing.T) {
	const ns = "ch-why"
	e.namespace(t, ns)
	e.podOn(t, ns, "web-0", chLive)
	p := pluginOn(e.c.Kubeconfig)

	out := p.why(t, "pod/web-0", "-n", ns, "--min-age", "0s").wantExit(0).stdout
	if !strings.Contains(out, "ch-why/pod/web-0   Running   nothing holds it") || !strings.Contains(out, "Nothing holds ch-why/pod/web-0") {
		t.Errorf("why on a healthy pod:\n%s", out)
	}
	for _, args := range [][]string{{"po", "web-0"}, {"pods/web-0"}, {"Pod/web-0"}, {"ns/" + ns}, {"namespace", ns}} {
		p.why(t, append(args, "-n", ns, "--min-age", "0s")...).wantExit(0)
	}

	// Completion, as kubectl runs it for a plugin: the names of that type in the namespace. The
	// last argument is the word being completed.
	for _, c := range []struct {
		args []string
		want string
	}{{[]string{"po", ""}, "web-0\n"}, {[]string{"pod/"}, "pod/web-0\n"}} {
		out := p.run(t, append([]string{"__complete", "why", "-n", ns}, c.args...)).wantExit(0).stdout
		if !strings.HasPrefix(out, c.want) {
			t.Errorf("__complete why %v: %q, want it to start %q", c.args, out, c.want)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pod/nope", "-n", ns}, `error: pods "nope" in namespace "ch-why" not found`},
		{[]string{"frobnicate", "web-0", "-n", ns}, `error: the server doesn't have a resource type "frobnicate"`},
		{[]string{"pod"}, "error: want TYPE/NAME or TYPE NAME"},
	} {
		_, stderr, _ := p.why(t, c.args...).wantExit(1).out()
		if !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("why %s: stderr %q, want one line starting %q", strings.Join(c.args, " "), stderr, c.want)
		}
	}

	// A healthy node: cluster-scoped, diagnosed on its own resource and default, where the
	// events about cluster-scoped objects are.
	out = p.why(t, "node/"+chLive, "--min-age", "0s").wantExit(0).stdout
	if !strings.Contains(out, "Nothing holds node/"+chLive) || !strings.Contains(out, "ran on namespace default and the cluster's nodes") {
		t.Errorf("why on a healthy node:\n%s", out)
	}

	// The same answer in process, every request logged: the namespace's pods, listed there.
	res, target, log := whyInProcess(t, e.c, "po", "web-0", ns)
	if len(res.Report.Findings) != 0 || res.Trees[0].State != "Running" {
		t.Errorf("in process: findings %v, state %q", res.Report.Findings, res.Trees[0].State)
	}
	// Nothing in the namespace is being deleted, so no check looks for a controller elsewhere:
	// the workloads are listed in the namespace, never in every namespace.
	workloadLists(t, log, ns, false, nil)

	// What why costs next to the scans it stands in for, measured on this small cluster.
	for _, c := range []struct {
		what string
		run  func(clients collect.Clients) error
	}{
		{"why pod/web-0", func(clients collect.Clients) error {
			_, err := why.Run(e.ctx, clients, target, scan.Options{Checks: builtin.Checks().All()})
			return err
		}},
		{"scan -n " + ns, func(clients collect.Clients) error {
			_, _, err := scan.Run(e.ctx, clients, scan.Options{Scope: snapshot.Scope{Namespace: ns}, Checks: builtin.Checks().All()})
			return err
		}},
		{"scan -A", func(clients collect.Clients) error {
			_, _, err := scan.Run(e.ctx, clients, scan.Options{Scope: snapshot.Scope{AllNamespaces: true}, Checks: builtin.Checks().All()})
			return err
		}},
	} {
		m, clients := meteredClients(t, e.c)
		if err := c.run(clients); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		t.Logf("%s: %d requests, %d response bytes", c.what, m.requests.Load(), m.bytes.Load())
	}
}

// meter counts the requests a client sends and the bytes of the answers it reads.
type meter struct {
	next            http.RoundTripper
	requests, bytes atomic.Int64
}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	m.requests.Add(1)
	resp, err := m.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countedBody{ReadCloser: resp.Body, n: &m.bytes}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// meteredClients are the collector's clients for c, metered.
func meteredClients(t testing.TB, c *testcluster.Cluster) (*meter, collect.Clients) {
	t.Helper()
	m := &meter{}
	cfg := c.RESTConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { m.next = rt; return m })
	clients, err := scan.Clients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, clients
}

// whyReadsNodeByName runs why in process on a pod bound to node: the node and its heartbeat
// Lease are read by name, once, and neither the nodes nor the node Leases are listed.
func whyReadsNodeByName(t *testing.T, e *teEnv, pod, ns, node string) {
	t.Helper()
	_, _, log := whyInProcess(t, e.c, "pod", pod, ns)
	// The pod waits for a kubelet that stopped heartbeating: no verdict rests on a controller
	// found in another namespace, so the workloads are listed in the pod's namespace only.
	workloadLists(t, log, ns, false, nil)
	const leases = "/apis/coordination.k8s.io/v1/namespaces/" + corev1.NamespaceNodeLease + "/leases"
	if got := log.matching("GET", leases); len(got) > 0 {
		t.Errorf("why listed the node Leases: %v", got)
	}
	for _, get := range []string{"/api/v1/nodes/" + node, leases + "/" + node} {
		if got := log.matching("GET", get); len(got) != 1 {
			t.Errorf("why read %s %d times, want once by name", get, len(got))
		}
	}
}

// workloadLists fails unless why listed the Deployments, StatefulSets and DaemonSets of ns in
// full, and never those of every namespace: it reads every namespace's as Tables without objects
// exactly when a check searched them (search), and then lists in full only the names of
// matched, by resource.
func workloadLists(t *testing.T, log *requestLog, ns string, search bool, matched map[string][]string) {
	t.Helper()
	for _, r := range []string{"deployments", "statefulsets", "daemonsets"} {
		if len(log.matching("GET", "/apis/apps/v1/namespaces/"+ns+"/"+r)) == 0 {
			t.Errorf("why did not list the %s of %s", r, ns)
		}
		tables, named, whole := everyNamespaceReads(log, r)
		if (len(tables) > 0) != search {
			t.Errorf("why read the %s of every namespace as a Table %d times, want read: %v", r, len(tables), search)
		}
		for _, name := range matched[r] {
			if !slices.ContainsFunc(named, func(req string) bool { return strings.Contains(req, "fieldSelector=metadata.name%3D"+name) }) {
				t.Errorf("why did not list the %s named %s in every namespace", r, name)
			}
		}
		if len(named) != len(matched[r]) || len(whole) > 0 {
			t.Errorf("why listed the %s of every namespace other than as a Table or by a matched name: %v by name, %v whole", r, named, whole)
		}
	}
}
