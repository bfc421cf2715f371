package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/foreign"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// TestForeignCaptures (issue 30, point 3) leaves a Deployment rolled to an image nobody can pull
// on the real kube-controller-manager, scheduler and kwok, and a Deployment whose rollout
// completed next to it. It captures the cluster as a troubleshoot.sh support bundle and as a
// directory of `kubectl get -o yaml|json` files, opens each with foreign.Open and scans it with
// the real collector and checks: the stuck rollout's finding and root cause are the live scan's,
// the healthy one has none, and the inputs the capture lacks are named unread, so the CLI would
// exit 1 rather than call anything healthy.
func TestForeignCaptures(t *testing.T) {
	t.Parallel()
	c, _ := scenarioCluster(t)
	e := &coreEnv{cs: c.Clientset()}
	for i := range 2 {
		e.node(t, fmt.Sprintf("%s-%d", corePoolApps, i), corePoolApps, "16")
	}
	stuck, healthy := e.deploymentImagePull(), e.deploymentComplete()
	t.Run("states", func(t *testing.T) {
		for _, s := range []*coreScenario{stuck, healthy} {
			t.Run(s.ns, func(t *testing.T) {
				t.Parallel()
				createNamespace(t, c, s.ns)
				s.build(t)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	live := foreignScan(t, liveClients(t, c.RESTConfig()), stuck.ns)
	if !live.Coverage.Looked() {
		t.Fatalf("the live scan did not look: %s", live.Coverage.Blindness())
	}
	stuck.assert(t, live)
	liveFinding := coreFinding(t, live, "rollout-stalled", stuck.kind, stuck.ns, stuck.name)
	liveWhy := foreignWhyRun(t, pluginOn(c.Kubeconfig), "", stuck).wantExit(2).report()
	if len(liveWhy.Findings) == 0 {
		t.Fatalf("the live why names no finding for %s/%s", stuck.kind, stuck.name)
	}
	started := time.Now()

	t.Run("support bundle", func(t *testing.T) {
		dir := t.TempDir()
		// An archive unpacks into one directory named after it.
		writeSupportBundle(t, c, filepath.Join(dir, "support-bundle-2026-11-28T06_50_00"), true)
		src := openForeign(t, dir, source.FormatSupportBundle, started)
		if want := foreignServerVersion(t, c); src.ServerVersion != want {
			t.Errorf("server version %q, want %q from cluster-info/cluster_version.json", src.ServerVersion, want)
		}
		if src.ClusterID == "" {
			t.Errorf("no cluster ID, though namespaces.json holds kube-system")
		}
		// The README's collectors capture every input the checks read here: nothing unread.
		foreignAssert(t, src, stuck, healthy, liveFinding, "")
		// The CLI reads it too: the stuck rollout named, exit 2 for it, and the capture's time
		// explained.
		run := pluginOn(c.Kubeconfig).offline(t).run(t, []string{"scan", "--from-bundle", dir, "-n", stuck.ns, "--min-age", "0s", "-o", "json"}).wantExit(2)
		if rep := run.report(); rep.Metadata.Source != report.SourceBundle || len(rep.Findings) == 0 || rep.Findings[0].ID != liveFinding.ID {
			t.Errorf("scan --from-bundle of the support bundle: source %q, findings:\n%s\nwant %s", rep.Metadata.Source, summaries(rep), liveFinding.ID)
		}
		if !strings.Contains(run.stderr, "lower bounds") {
			t.Errorf("scan --from-bundle does not say how the capture's time was chosen:\n%s", run.stderr)
		}
		foreignWhy(t, c, dir, stuck, liveWhy, 2)

		// Without the runPod collectors (clusterInfo and clusterResources alone) the
		// ControllerRevisions, APIServices and admission policies are not in it: unread.
		bare := t.TempDir()
		writeSupportBundle(t, c, filepath.Join(bare, "support-bundle-2026-11-28T06_51_00"), false)
		foreignAssert(t, openForeign(t, bare, source.FormatSupportBundle, started), stuck, healthy, liveFinding, "apps/controllerrevisions")
	})

	t.Run("kubectl lists", func(t *testing.T) {
		dir := t.TempDir()
		kubectlGet := func(file string, args ...string) {
			t.Helper()
			out, errOut, code := runKubectl(t, c.Kubeconfig, args...)
			if code != 0 {
				t.Fatalf("kubectl %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
			}
			writeCaptureFile(t, filepath.Join(dir, file), []byte(out))
		}
		for _, s := range []*coreScenario{stuck, healthy} {
			kubectlGet(filepath.Join(s.ns, "workloads.yaml"), "get", "deployments,replicasets,pods", "-n", s.ns, "-o", "yaml")
			kubectlGet(filepath.Join(s.ns, "events.json"), "get", "events", "-n", s.ns, "-o", "json")
		}
		// The controllers the checks know run in other namespaces: every workload, as a user
		// capturing a cluster would list them.
		kubectlGet("cluster/workloads.yaml", "get", "deployments,statefulsets,daemonsets", "-A", "-o", "yaml")
		kubectlGet("cluster/nodes.yaml", "get", "nodes", "-o", "yaml")
		kubectlGet("cluster/namespaces.yaml", "get", "namespaces", "-o", "yaml")
		src := openForeign(t, dir, source.FormatKubectlLists, started)
		foreignAssert(t, src, stuck, healthy, liveFinding, "coordination.k8s.io/leases")
		// These lists lack inputs the checks detect from (Leases): why names the finding all the
		// same and exits 1, as scan does.
		foreignWhy(t, c, dir, stuck, liveWhy, 1)
	})
}

// liveClients are the collector's clients for a REST config.
func liveClients(t *testing.T, cfg *rest.Config) collect.Clients {
	t.Helper()
	clients, err := scan.Clients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clients
}

// foreignScan runs every check on one namespace with --min-age 0s.
func foreignScan(t *testing.T, clients collect.Clients, ns string) *report.Report {
	t.Helper()
	rep, _, err := scan.Run(t.Context(), clients, scan.Options{
		Scope: snapshot.Scope{Namespace: ns}, Settings: snapshot.DefaultSettings(), Checks: builtin.Checks().All(), MinAge: 0,
	})
	if err != nil {
		t.Fatalf("scan %s: %v", ns, err)
	}
	return rep
}

// openForeign opens dir with foreign.Open and checks what it says of the capture.
func openForeign(t *testing.T, dir string, format source.Format, before time.Time) *source.Source {
	t.Helper()
	src, err := foreign.Open(os.DirFS(dir))
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	if src.Format != format {
		t.Fatalf("format %q, want %q", src.Format, format)
	}
	// Neither format records its time: the newest time an object records, before the capture.
	if src.CapturedAt.IsZero() || src.CapturedAt.After(time.Now()) {
		t.Errorf("capturedAt %v: want the newest object time, before now", src.CapturedAt)
	}
	if src.CapturedAt.Before(before.Add(-5 * time.Minute)) {
		t.Errorf("capturedAt %v: far older than the state the capture holds (%v)", src.CapturedAt, before)
	}
	noted := false
	for _, w := range src.Warnings {
		noted = noted || strings.Contains(w, "lower bounds")
	}
	if !noted {
		t.Errorf("warnings %q do not say ages are lower bounds", src.Warnings)
	}
	return src
}

// foreignAssert scans the capture offline: the stuck namespace gives the live finding and root
// cause, the healthy one none, and both name what the capture lacks (want among it) as unread.
func foreignAssert(t *testing.T, src *source.Source, stuck, healthy *coreScenario, live report.Finding, want string) {
	t.Helper()
	offline := liveClients(t, &rest.Config{Host: "http://bundle.invalid", Transport: src.Transport})
	rep := foreignScan(t, offline, stuck.ns)
	stuck.assert(t, rep)
	f := coreFinding(t, rep, "rollout-stalled", stuck.kind, stuck.ns, stuck.name)
	if f.ID != live.ID || f.RootCause.ID != live.RootCause.ID || f.Object != live.Object {
		t.Errorf("offline finding %s %s %+v, live %s %s %+v", f.ID, f.RootCause.ID, f.Object, live.ID, live.RootCause.ID, live.Object)
	}
	foreignUnread(t, rep, src.Format, want)

	rep = foreignScan(t, offline, healthy.ns)
	if len(rep.Findings) != 0 {
		t.Errorf("findings in the healthy namespace %s:\n%s", healthy.ns, summaries(rep))
	}
	foreignUnread(t, rep, src.Format, want)
}

// foreignWhyRun runs `why KIND/NAME` on the stuck object, from the capture in dir when dir is set.
func foreignWhyRun(t *testing.T, p plugin, dir string, stuck *coreScenario) *pluginRun {
	t.Helper()
	args := []string{"why", stuck.kind + "/" + stuck.name, "-n", stuck.ns, "--min-age", "0s", "-o", "json"}
	if dir != "" {
		args = append(args, "--from-bundle", dir)
	}
	return p.run(t, args)
}

// foreignWhy runs `why --from-bundle` on the capture in dir without a cluster: the live why's
// finding and root cause, exit code as the capture's coverage makes it.
func foreignWhy(t *testing.T, c *testcluster.Cluster, dir string, stuck *coreScenario, live *report.Report, code int) {
	t.Helper()
	rep := foreignWhyRun(t, pluginOn(c.Kubeconfig).offline(t), dir, stuck).wantExit(code).report()
	if len(rep.Findings) == 0 || rep.Findings[0].ID != live.Findings[0].ID || rep.Findings[0].RootCause.ID != live.Findings[0].RootCause.ID {
		t.Errorf("why --from-bundle %s:\n%swant %s %s", dir, summaries(rep), live.Findings[0].ID, live.Findings[0].RootCause.ID)
	}
	if rep.Metadata.Source != report.SourceBundle {
		t.Errorf("why --from-bundle: source %q", rep.Metadata.Source)
	}
}

// foreignUnread checks that the scan could not vouch for what it did not find: inputs the
// capture lacks are unread, each saying it is not in the capture, want among them. With want
// empty, the capture holds every input: the scan looked everywhere.
func foreignUnread(t *testing.T, rep *report.Report, format source.Format, want string) {
	t.Helper()
	if want == "" {
		if !rep.Coverage.Looked() {
			t.Errorf("the offline scan did not look: %s", rep.Coverage.Blindness())
		}
		for _, u := range rep.Coverage.Unread {
			t.Errorf("unread %s: %s", u.Input, u.Reason)
		}
		return
	}
	if rep.Coverage.Looked() {
		t.Fatalf("the offline scan claims it looked everywhere: coverage %+v", rep.Coverage)
	}
	found := false
	for _, u := range rep.Coverage.Unread {
		t.Logf("unread %s: %s", u.Input, u.Reason)
		found = found || strings.Contains(u.Reason, want) && strings.Contains(u.Reason, "is not in the "+string(format))
	}
	if !found {
		t.Errorf("no unread input says %s is not in the %s", want, format)
	}
}

func foreignServerVersion(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	v, err := c.Clientset().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v.GitVersion
}

// supportBundleResources are what troubleshoot's clusterResources collector lists of what the
// checks read, by the names it writes them under (replicatedhq/troubleshoot v0.133.0
// pkg/constants/constants.go, pkg/collect/cluster_resources.go CollectClusterResources.Collect;
// leases since v0.70.3). It lists no ControllerRevisions, APIServices or admission policies.
var supportBundleResources = map[string]schema.GroupVersionResource{
	"pods":                              {Version: "v1", Resource: "pods"},
	"services":                          {Version: "v1", Resource: "services"},
	"events":                            {Version: "v1", Resource: "events"},
	"pvcs":                              {Version: "v1", Resource: "persistentvolumeclaims"},
	"endpoints":                         {Version: "v1", Resource: "endpoints"},
	"configmaps":                        {Version: "v1", Resource: "configmaps"},
	"serviceaccounts":                   {Version: "v1", Resource: "serviceaccounts"},
	"leases":                            {Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	"limitranges":                       {Version: "v1", Resource: "limitranges"},
	"resource-quota":                    {Version: "v1", Resource: "resourcequotas"},
	"deployments":                       {Group: "apps", Version: "v1", Resource: "deployments"},
	"replicasets":                       {Group: "apps", Version: "v1", Resource: "replicasets"},
	"statefulsets":                      {Group: "apps", Version: "v1", Resource: "statefulsets"},
	"daemonsets":                        {Group: "apps", Version: "v1", Resource: "daemonsets"},
	"jobs":                              {Group: "batch", Version: "v1", Resource: "jobs"},
	"cronjobs":                          {Group: "batch", Version: "v1", Resource: "cronjobs"},
	"pod-disruption-budgets":            {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	"endpointslices":                    {Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
	"ingress":                           {Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
	"network-policy":                    {Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	"roles":                             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"rolebindings":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	"nodes":                             {Version: "v1", Resource: "nodes"},
	"pvs":                               {Version: "v1", Resource: "persistentvolumes"},
	"storage-classes":                   {Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	"volumeattachments":                 {Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
	"priorityclasses":                   {Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"},
	"clusterroles":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"clusterrolebindings":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"ingress-classes":                   {Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"},
	"validating-webhook-configurations": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	"mutating-webhook-configurations":   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	"custom-resource-definitions":       {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
}

// writeSupportBundle writes the cluster into dir as troubleshoot's clusterResources and
// clusterInfo collectors do: a list per namespace per namespaced resource, one list per
// cluster-scoped resource, every namespace's objects of each CRD as an array under
// custom-resources/<crd name>/<namespace>.json for the namespaces that have some, and
// cluster-info/cluster_version.json; with runPods, what the README's runPod collectors add.
func writeSupportBundle(t *testing.T, c *testcluster.Cluster, dir string, runPods bool) {
	t.Helper()
	ctx := t.Context()
	dyn := c.Dynamic()
	write := func(name string, v any) {
		t.Helper()
		raw, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		writeCaptureFile(t, filepath.Join(dir, name), raw)
	}
	list := func(gvr schema.GroupVersionResource, ns string) *unstructured.UnstructuredList {
		t.Helper()
		l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s in %q: %v", gvr, ns, err)
		}
		return l
	}
	namespaces := list(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "")
	write("cluster-resources/namespaces.json", namespaces)
	for name, gvr := range supportBundleResources {
		if builtinNamespaced(gvr.Resource) {
			for _, ns := range namespaces.Items {
				write(fmt.Sprintf("cluster-resources/%s/%s.json", name, ns.GetName()), list(gvr, ns.GetName()))
			}
			continue
		}
		write("cluster-resources/"+name+".json", list(gvr, ""))
	}
	crds := list(supportBundleResources["custom-resource-definitions"], "")
	// The collector lists every CRD's objects and writes only what it found (crsV1): no
	// custom-resources/ directory when no CRD has objects.
	for _, crd := range crds.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		version, _ := versions[0].(map[string]any)["name"].(string)
		items := list(schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, "").Items
		byNS := map[string][]map[string]any{}
		for _, it := range items {
			byNS[it.GetNamespace()] = append(byNS[it.GetNamespace()], it.Object)
		}
		for ns, objs := range byNS {
			if scope == "Cluster" {
				write("cluster-resources/custom-resources/"+crd.GetName()+".json", objs)
			} else {
				write(fmt.Sprintf("cluster-resources/custom-resources/%s/%s.json", crd.GetName(), ns), objs)
			}
		}
	}
	v, err := c.Clientset().Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	write("cluster-info/cluster_version.json", map[string]any{"info": v, "string": v.String()})
	write("version.yaml", map[string]any{"apiVersion": "troubleshoot.sh/v1beta2", "kind": "SupportBundle"})
	if runPods {
		writeRunPods(t, c, dir)
	}
}

// readmeRunPods are the runPod collectors of the README's SupportBundle spec: each prints one
// cluster-wide list with `kubectl get --raw`.
var readmeRunPods = map[string]string{
	"workloaddoctor-controllerrevisions":               "/apis/apps/v1/controllerrevisions",
	"workloaddoctor-apiservices":                       "/apis/apiregistration.k8s.io/v1/apiservices",
	"workloaddoctor-validatingadmissionpolicies":       "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
	"workloaddoctor-validatingadmissionpolicybindings": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
}

// writeRunPods writes what the README's runPod collectors leave in a bundle
// (replicatedhq/troubleshoot v0.133.0 pkg/collect/run_pod.go): the pod, spec stripped, labelled
// troubleshoot-role=run-collector (createPodStruct) with the collector's annotations, as
// <name>/<name>.json (savePodDetails), and its log, what `kubectl get --raw PATH` printed, under
// cluster-resources/pods/logs/<namespace>/<pod>/<container>.log (runWithoutTimeout,
// logs.go savePodLogs).
func writeRunPods(t *testing.T, c *testcluster.Cluster, dir string) {
	t.Helper()
	for name, path := range readmeRunPods {
		out, errOut, code := runKubectl(t, c.Kubeconfig, "get", "--raw", path)
		if code != 0 {
			t.Fatalf("kubectl get --raw %s: exit %d\n%s", path, code, errOut)
		}
		pod := map[string]any{"metadata": map[string]any{
			"name": name, "namespace": "workloaddoctor-capture",
			"labels":      map[string]string{"troubleshoot-role": "run-collector"},
			"annotations": map[string]string{foreign.AnnotationClusterWideLists: "true"},
		}, "spec": map[string]any{}, "status": map[string]any{"phase": "Succeeded"}}
		writeCaptureFile(t, filepath.Join(dir, name, name+".json"), must(json.Marshal(pod)))
		writeCaptureFile(t, filepath.Join(dir, "cluster-resources", "pods", "logs", "workloaddoctor-capture", name, "kubectl.log"), []byte(out))
	}
}

// writeCaptureFile writes one file of a capture, making its directories.
func writeCaptureFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// builtinNamespaced says which of supportBundleResources are namespaced.
func builtinNamespaced(resource string) bool {
	switch resource {
	case "nodes", "persistentvolumes", "storageclasses", "volumeattachments", "priorityclasses", "clusterroles",
		"clusterrolebindings", "ingressclasses", "validatingwebhookconfigurations", "mutatingwebhookconfigurations",
		"customresourcedefinitions", "namespaces":
		return false
	}
	return true
}
