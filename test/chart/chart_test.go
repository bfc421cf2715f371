// Package chart lints and renders charts/workloaddoctor with the Helm library. It is a module of
// its own so that the plugin's go.mod does not carry Helm; `make test-chart` runs it and leaves
// the rendered manifests in bin/chart for the e2e suite's server-side dry run.
package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "../../charts/workloaddoctor"
	namespace = "workloaddoctor"
)

// render renders the chart with values over its defaults, as release "wd", and returns its
// objects by kind/name and the whole YAML.
func render(t *testing.T, values map[string]any) (map[string]map[string]any, string) {
	t.Helper()
	files, err := renderFiles(t, values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	objs := map[string]map[string]any{}
	var all []string
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[n], "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s renders invalid YAML: %v\n%s", n, err, doc)
			}
			if m == nil {
				continue
			}
			objs[m["kind"].(string)+"/"+m["metadata"].(map[string]any)["name"].(string)] = m
			all = append(all, strings.TrimSpace(doc))
		}
	}
	return objs, strings.Join(all, "\n---\n") + "\n"
}

// renderFiles renders the chart's templates; the error is the chart's own (a fail in a template).
func renderFiles(t *testing.T, values map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "wd", Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Render(ch, vals)
}

// save leaves a rendering for the e2e dry run when CHART_RENDER_DIR is set.
func save(t *testing.T, name, manifests string) {
	t.Helper()
	dir := os.Getenv("CHART_RENDER_DIR")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(manifests), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestChartLints(t *testing.T) {
	for _, vals := range []map[string]any{nil, {"autoFix": map[string]any{"rootCauses": []any{"finalizer-owner-missing"}}, "serviceMonitor": map[string]any{"enabled": true}}} {
		l := lint.All(chartDir, vals, namespace, false)
		for _, m := range l.Messages {
			t.Logf("lint: %s", m)
		}
		if l.HighestSeverity >= support.WarningSev {
			t.Errorf("helm lint with %v: highest severity %d", vals, l.HighestSeverity)
		}
	}
}

func container(t *testing.T, objs map[string]map[string]any) (args string, ctr map[string]any, spec map[string]any) {
	t.Helper()
	dep := objs["Deployment/wd-workloaddoctor"]
	if dep == nil {
		t.Fatalf("no Deployment: %v", keys(objs))
	}
	spec = dep["spec"].(map[string]any)
	ctr = spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	var a []string
	for _, x := range ctr["args"].([]any) {
		a = append(a, x.(string))
	}
	return strings.Join(a, " "), ctr, spec
}

func TestChartDefaults(t *testing.T) {
	objs, all := render(t, nil)
	save(t, "default", all)
	args, ctr, spec := container(t, objs)
	if spec["replicas"] != float64(2) || !strings.Contains(args, "--interval=5m") || !strings.Contains(args, "--reports=auto") ||
		!strings.Contains(args, "--leader-elect") || strings.Contains(args, "--auto-fix") {
		t.Errorf("replicas %v, args %q", spec["replicas"], args)
	}
	sc := ctr["securityContext"].(map[string]any)
	if sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false || ctr["resources"] == nil {
		t.Errorf("container: %v", ctr)
	}
	if objs["ClusterRoleBinding/wd-workloaddoctor-fix"] != nil || objs["ServiceMonitor/wd-workloaddoctor"] != nil {
		t.Errorf("defaults bind the fix role or render a ServiceMonitor: %v", keys(objs))
	}
	cm := objs["ConfigMap/wd-workloaddoctor-dashboard"]
	if cm == nil || cm["metadata"].(map[string]any)["labels"].(map[string]any)["grafana_dashboard"] != "1" {
		t.Fatalf("dashboard ConfigMap: %v", cm)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(cm["data"].(map[string]any)["workloaddoctor.json"].(string)), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, x := range p.Targets {
			exprs = append(exprs, x.Expr)
		}
	}
	joined := strings.Join(exprs, "\n")
	for _, want := range []string{"sum by (check) (workloaddoctor_findings)", "sum by (root_cause) (workloaddoctor_findings)",
		"sum by (namespace) (workloaddoctor_findings)", "topk(20, workloaddoctor_finding_age_seconds)",
		"workloaddoctor_scan_duration_seconds_bucket", "workloaddoctor_coverage_complete"} {
		if !strings.Contains(joined, want) {
			t.Errorf("dashboard lacks a panel on %s", want)
		}
	}
}

func TestChartAutoFixAndServiceMonitor(t *testing.T) {
	objs, all := render(t, map[string]any{
		"autoFix":        map[string]any{"rootCauses": []any{"finalizer-owner-missing", "kruise-drops-resize-policy"}, "maxPerCycle": 2},
		"serviceMonitor": map[string]any{"enabled": true},
		"interval":       "2m", "reports": "policyreport",
	})
	save(t, "autofix-servicemonitor", all)
	args, _, _ := container(t, objs)
	for _, want := range []string{"--auto-fix=finalizer-owner-missing,kruise-drops-resize-policy", "--max-fixes-per-cycle=2", "--interval=2m", "--reports=policyreport"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
	if objs["ClusterRoleBinding/wd-workloaddoctor-fix"] == nil || objs["ServiceMonitor/wd-workloaddoctor"] == nil {
		t.Errorf("objects: %v", keys(objs))
	}
}

// Exemption rules become a mounted file the auditor reads, and a change of them rolls the pods.
func TestChartExemptions(t *testing.T) {
	objs, all := render(t, map[string]any{"exemptions": map[string]any{"disallowAnnotations": true, "rules": []any{
		map[string]any{"namespaces": []any{"legacy-*"}, "checks": []any{"stuck-terminating"}, "reason": "migration leftovers"}}}})
	save(t, "exemptions", all)
	args, ctr, spec := container(t, objs)
	if !strings.Contains(args, "--exemptions=/etc/workloaddoctor/exemptions.yaml") || !strings.Contains(args, "--disallow-annotation-exemptions") {
		t.Errorf("args %q", args)
	}
	cm := objs["ConfigMap/wd-workloaddoctor-exemptions"]
	if cm == nil {
		t.Fatalf("no exemptions ConfigMap: %v", keys(objs))
	}
	var file struct {
		APIVersion, Kind string
		Rules            []map[string]any
	}
	if err := yaml.UnmarshalStrict([]byte(cm["data"].(map[string]any)["exemptions.yaml"].(string)), &file); err != nil ||
		file.Kind != "Exemptions" || file.APIVersion != "workloaddoctor.io/v1alpha1" || len(file.Rules) != 1 || file.Rules[0]["reason"] != "migration leftovers" {
		t.Errorf("exemptions.yaml %+v (%v)", file, err)
	}
	if !strings.Contains(fmt.Sprint(ctr["volumeMounts"]), "/etc/workloaddoctor") ||
		spec["template"].(map[string]any)["metadata"].(map[string]any)["annotations"] == nil {
		t.Errorf("mount %v, pod annotations %v", ctr["volumeMounts"], spec["template"].(map[string]any)["metadata"])
	}
	def, _ := render(t, nil)
	if args, _, _ := container(t, def); strings.Contains(args, "exemptions") || def["ConfigMap/wd-workloaddoctor-exemptions"] != nil {
		t.Errorf("defaults render exemptions: %q", args)
	}
}

// Without leader election only one replica may run: every replica would write reports and fixes.
func TestChartOneWriterWithoutLeaderElection(t *testing.T) {
	off := map[string]any{"enabled": false}
	objs, _ := render(t, map[string]any{"leaderElection": off, "replicaCount": 1})
	if args, _, spec := container(t, objs); spec["replicas"] != float64(1) || strings.Contains(args, "--leader-elect") {
		t.Errorf("replicas %v, args %q", spec["replicas"], args)
	}
	if _, err := renderFiles(t, map[string]any{"leaderElection": off}); err == nil || !strings.Contains(err.Error(), "needs leaderElection.enabled") {
		t.Errorf("2 replicas without leader election rendered: %v", err)
	}
}

// The chart's roles grant what deploy/rbac grants, no more and no less.
func TestChartRolesMatchDeployRBAC(t *testing.T) {
	objs, _ := render(t, map[string]any{"autoFix": map[string]any{"rootCauses": []any{"finalizer-owner-missing"}}})
	for _, fr := range [][2]string{{"scan.yaml", "workloaddoctor-scan"}, {"scan.yaml", "workloaddoctor-scan-logs"}, {"fix.yaml", "workloaddoctor-fix"}} {
		file, role := fr[0], fr[1]
		raw, err := os.ReadFile(filepath.Join("../../deploy/rbac", file))
		if err != nil {
			t.Fatal(err)
		}
		var want any
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err == nil && m != nil && m["metadata"].(map[string]any)["name"] == role {
				want = m["rules"]
			}
		}
		got := objs["ClusterRole/wd-"+role]
		if want == nil || got == nil || !reflect.DeepEqual(got["rules"], want) {
			t.Errorf("ClusterRole %s: chart rules differ from deploy/rbac/%s", role, file)
		}
	}
}

// The auditor's ServiceAccount reads the controllers' leader logs the scan uses as evidence
// (pods/log get, in any namespace: the controllers run where their install put them) unless
// controllerLogs is false, and never reads Secrets.
func TestChartServiceAccountGrants(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		logs   bool
	}{
		{nil, true},
		{map[string]any{"autoFix": map[string]any{"rootCauses": []any{"finalizer-owner-missing"}}}, true},
		{map[string]any{"controllerLogs": false}, false},
	} {
		objs, _ := render(t, c.values)
		rules := boundRules(t, objs, "wd-workloaddoctor")
		if got := allows(rules, "", "pods/log", "get"); got != c.logs {
			t.Errorf("values %v: get pods/log granted %v, want %v", c.values, got, c.logs)
		}
		if !allows(rules, "", "pods", "list") {
			t.Errorf("values %v: list pods not granted", c.values)
		}
		for _, verb := range []string{"get", "list", "watch"} {
			if allows(rules, "", "secrets", verb) {
				t.Errorf("values %v: %s secrets granted", c.values, verb)
			}
		}
	}
}

// boundRules returns the rules of every ClusterRole bound cluster-wide to the ServiceAccount.
func boundRules(t *testing.T, objs map[string]map[string]any, sa string) []any {
	t.Helper()
	var rules []any
	for key, o := range objs {
		if !strings.HasPrefix(key, "ClusterRoleBinding/") {
			continue
		}
		bound := false
		for _, s := range o["subjects"].([]any) {
			sub := s.(map[string]any)
			bound = bound || (sub["kind"] == "ServiceAccount" && sub["name"] == sa && sub["namespace"] == namespace)
		}
		if !bound {
			continue
		}
		role := objs["ClusterRole/"+o["roleRef"].(map[string]any)["name"].(string)]
		if role == nil {
			t.Fatalf("%s binds a ClusterRole the chart does not render", key)
		}
		rules = append(rules, role["rules"].([]any)...)
	}
	return rules
}

// allows says whether a rule grants verb on resource of group, as RBAC matches them.
func allows(rules []any, group, resource, verb string) bool {
	has := func(list any, want string) bool {
		for _, x := range list.([]any) {
			if x == want || x == "*" {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		rule := r.(map[string]any)
		if rule["resourceNames"] == nil && has(rule["apiGroups"], group) && has(rule["resources"], resource) && has(rule["verbs"], verb) {
			return true
		}
	}
	return false
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
