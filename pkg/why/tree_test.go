package why

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func ref(apiVersion, kind, name string) report.ObjectRef {
	return report.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: "shop", Name: name, UID: "uid-" + name}
}

func block(f report.Finding) report.BlockRef {
	return report.BlockRef{APIVersion: f.Object.APIVersion, Kind: f.Object.Kind, Namespace: f.Object.Namespace, Name: f.Object.Name, FindingID: f.ID}
}

// deadNodeChain is what a scan reports after `kubectl delete deploy web --cascade=foreground`
// while web's only pod is on a node whose kubelet died: the garbage collector
// (kubernetes v1.37.1 pkg/controller/garbagecollector/garbagecollector.go,
// processDeletingDependentsItem) deletes the ReplicaSet in the foreground too and waits for the
// pod, whose deletion the dead kubelet never confirms. The Deployment's and the ReplicaSet's
// findings chain down to the pod's, as checks.chainToRoots leaves them: the chain nearest first,
// the root's summary appended, no fixes of their own.
func deadNodeChain() *report.Report {
	pod := report.Finding{Check: "stuck-terminating", Severity: report.SeverityError, Object: ref("v1", "Pod", "web-5d8f-x2x8z"),
		Node: "kw-2", Since: now.Add(-4 * time.Minute), Summary: "pod shop/web-5d8f-x2x8z Terminating for 4m on node kw-2, NotReady",
		RootCause: report.RootCause{ID: "node-not-ready", Message: "The pod's node stopped reporting; its kubelet cannot confirm the deletion.",
			Evidence: []string{"node kw-2 Ready=Unknown since 2026-11-27T11:55:00Z (NodeStatusUnknown)", "deletionTimestamp 2026-11-27T11:56:00Z"}},
		Fixes: []report.Fix{{Action: "force-delete", Description: "delete the pod with grace period 0", Risk: report.RiskMedium}}}
	pod.ID = report.FindingID(pod.Object, pod.Check, pod.RootCause.ID)
	rs := report.Finding{Check: "stuck-terminating", Severity: report.SeverityWarning, Object: ref("apps/v1", "ReplicaSet", "web-5d8f"),
		Since: now.Add(-4 * time.Minute), Summary: "replicaset shop/web-5d8f Terminating for 4m; root: pod shop/web-5d8f-x2x8z, " + pod.Summary,
		RootCause: report.RootCause{ID: "dependents-remaining", Message: "foregroundDeletion waits for its dependents.",
			Evidence: []string{"dependent: pod shop/web-5d8f-x2x8z, Terminating"}},
		BlockedBy: []report.BlockRef{block(pod)}}
	rs.ID = report.FindingID(rs.Object, rs.Check, rs.RootCause.ID)
	dep := report.Finding{Check: "stuck-terminating", Severity: report.SeverityWarning, Object: ref("apps/v1", "Deployment", "web"),
		Since: now.Add(-4 * time.Minute), Summary: "deployment shop/web Terminating for 4m; root: pod shop/web-5d8f-x2x8z, " + pod.Summary,
		RootCause: report.RootCause{ID: "dependents-remaining", Message: "foregroundDeletion waits for its dependents.",
			Evidence: []string{"dependent: replicaset shop/web-5d8f, Terminating", "finalizer foregroundDeletion"}},
		BlockedBy: []report.BlockRef{block(rs), block(pod)}}
	dep.ID = report.FindingID(dep.Object, dep.Check, dep.RootCause.ID)
	r := &report.Report{Metadata: report.Metadata{GeneratedAt: now, Context: "test", ServerVersion: "v1.37.1"},
		Coverage: report.Coverage{Checks: []string{"rollout-stalled", "stuck-terminating"}},
		Findings: []report.Finding{pod, rs, dep}}
	r.Normalize()
	return r
}

func states(ref report.ObjectRef) string {
	if ref.Kind == "Pod" && ref.Name == "web-0" {
		return "Running"
	}
	return "Terminating for 4m"
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./pkg/why -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func draw(t *testing.T, res *Result, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, res, format, false); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTreeThreeDeep(t *testing.T) {
	r := deadNodeChain()
	res := Build(r, ref("apps/v1", "Deployment", "web"), states)
	res.Namespace = "shop"
	res.Finalizers = []Finalizer{{Name: "foregroundDeletion"}, {Name: "example.com/audit", Manager: "audit-operator", Time: now.Add(-time.Hour)}}
	golden(t, "deployment-chain.tree", draw(t, res, FormatTree))
	golden(t, "deployment-chain.wide", draw(t, res, FormatWide))
	doc := draw(t, res, FormatJSON)
	golden(t, "deployment-chain.json", doc)
	// fix --from-report takes the document as it takes a scan's.
	if parsed, err := report.Parse(doc, "why -o json"); err != nil || len(parsed.Findings) != 3 {
		t.Errorf("why -o json as a report: %v", err)
	}

	// The document is the chain, the asked object's finding first and the root last.
	var kinds []string
	for _, f := range res.Report.Findings {
		kinds = append(kinds, f.Object.Kind)
	}
	if got := strings.Join(kinds, ","); got != "Deployment,ReplicaSet,Pod" {
		t.Errorf("document findings %s, want Deployment,ReplicaSet,Pod", got)
	}
	if res.Report.Summary.Total != 3 || res.Report.Summary.Error != 1 {
		t.Errorf("summary %+v", res.Report.Summary)
	}
}

// TestTreeFromTheMiddle asks about the ReplicaSet: its chain goes on to the pod, and the
// Deployment that waits on it is named, not drawn.
func TestTreeFromTheMiddle(t *testing.T) {
	res := Build(deadNodeChain(), ref("apps/v1", "ReplicaSet", "web-5d8f"), states)
	if len(res.Trees) != 1 || len(res.Trees[0].Children) != 1 || !res.Trees[0].Children[0].Root() {
		t.Fatalf("want the ReplicaSet over its root pod, got %+v", res.Trees)
	}
	if len(res.HeldBy) != 1 || res.HeldBy[0].Kind != "Deployment" {
		t.Errorf("held by %v, want the Deployment", res.HeldBy)
	}
	if len(res.Report.Findings) != 2 {
		t.Errorf("document has %d findings, want the ReplicaSet's and the pod's", len(res.Report.Findings))
	}
}

// TestTreeSameNameOtherObject: a finding on an object of the same name but another UID (deleted
// and recreated since) is not the asked object's.
func TestTreeSameNameOtherObject(t *testing.T) {
	obj := ref("v1", "Pod", "web-5d8f-x2x8z")
	obj.UID = "uid-recreated"
	res := Build(deadNodeChain(), obj, states)
	if len(res.Report.Findings) != 0 {
		t.Errorf("findings %v on another object's UID", res.Report.Findings)
	}
}

func TestTreeHealthyPod(t *testing.T) {
	r := deadNodeChain()
	res := Build(r, ref("v1", "Pod", "web-0"), states)
	res.Namespace = "shop"
	golden(t, "healthy-pod.tree", draw(t, res, FormatTree))
	if len(res.Report.Findings) != 0 || len(res.HeldBy) != 0 {
		t.Errorf("a healthy pod has findings %v, held by %v", res.Report.Findings, res.HeldBy)
	}
}

// TestTreeSiblings: a rollout that waits on two stuck pods another check judges (linkBlockers
// names their findings) draws both under the workload, each a root; and a second finding on the
// same object is a second tree.
func TestTreeSiblings(t *testing.T) {
	pod := func(name string) report.Finding {
		f := report.Finding{Check: "stuck-terminating", Severity: report.SeverityError, Object: ref("v1", "Pod", name),
			Summary: "pod " + name + " Terminating", RootCause: report.RootCause{ID: "node-missing"},
			Fixes: []report.Fix{{Action: "force-delete"}}}
		f.ID = report.FindingID(f.Object, f.Check, f.RootCause.ID)
		return f
	}
	a, b := pod("web-a"), pod("web-b")
	ds := report.Finding{Check: "rollout-stalled", Severity: report.SeverityWarning, Object: ref("apps/v1", "DaemonSet", "agent"),
		Summary: "DaemonSet agent rollout has made no progress", RootCause: report.RootCause{ID: "blocked-by-stuck-pod"},
		BlockedBy: []report.BlockRef{block(a), block(b)}}
	ds.ID = report.FindingID(ds.Object, ds.Check, ds.RootCause.ID)
	other := report.Finding{Check: "resize-policy-drift", Severity: report.SeverityInfo, Object: ds.Object,
		Summary: "benign", RootCause: report.RootCause{ID: "benign-defaulting"}}
	other.ID = report.FindingID(other.Object, other.Check, other.RootCause.ID)
	r := &report.Report{Findings: []report.Finding{a, b, ds, other}}
	r.Normalize()

	res := Build(r, ds.Object, states)
	if len(res.Trees) != 2 {
		t.Fatalf("%d trees, want one per finding on the DaemonSet", len(res.Trees))
	}
	var withPods *Node
	for _, n := range res.Trees {
		if n.Finding.ID == ds.ID {
			withPods = n
		}
	}
	if withPods == nil || len(withPods.Children) != 2 || !withPods.Children[0].Root() || !withPods.Children[1].Root() {
		t.Fatalf("want the rollout over two root pods, got %+v", withPods)
	}
	if n := len(res.Report.Findings); n != 4 {
		t.Errorf("document has %d findings, want 4", n)
	}
}

// conversionNamespace is what a scan reports on a namespace whose deletion the namespace
// controller cannot finish: a CustomResourceDefinition stores its objects at v1beta1, discovery
// prefers v1, and the conversion webhook's Service is gone. The controller deletes through the
// preferred version (kubernetes v1.37.1 pkg/controller/namespace/deletion/namespaced_resources_deleter.go,
// deleteAllContent), every read of the objects calls the webhook, and makeDeleteContentCondition
// writes the failure into NamespaceDeletionContentFailure. The finding names the CRD in
// blockedBy; the CRD is not stuck, so no finding of its own. The evidence is as
// TestNamespaceConversionWebhook's scan gave it.
func conversionNamespace() *report.Report {
	ns := report.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: "uid-shop"}
	f := report.Finding{Check: "stuck-terminating", Severity: report.SeverityError, Object: ns, Since: now.Add(-4 * time.Minute),
		Summary: "Terminating for 4m: the conversion webhook of CustomResourceDefinition gadgets.example.com fails (Service gadget-system/gadget-converter does not exist)",
		RootCause: report.RootCause{ID: "conversion-webhook-unavailable",
			Message: "The namespace controller deletes each resource through the version discovery prefers, and the objects of gadgets.example.com are stored at another version, so every read and deletion of them calls the conversion webhook of CustomResourceDefinition gadgets.example.com, which cannot answer.",
			Evidence: []string{"deletionTimestamp 2026-11-27T11:56:00Z (4m ago), no finalizers",
				"condition NamespaceDeletionContentFailure=True (ContentDeletionFailed) since 2026-11-27T11:56:08Z (3m52s ago): Failed to delete all resource types, 1 remaining: failed to read one or more gadgets.example.com from the storage",
				"resource types the namespace controller cannot read or delete: gadgets.example.com (Kind Gadget, stored at example.com/v1beta1)",
				"CustomResourceDefinition gadgets.example.com: conversion webhook, calls Service gadget-system/gadget-converter port 443",
				"Service gadget-system/gadget-converter: not found",
				`recent failure: conversion webhook for example.com/v1beta1, Kind=Gadget failed: Post "https://gadget-converter.gadget-system.svc:443/convert?timeout=30s": service "gadget-converter" not found`,
				"1 Terminating namespace(s) in scope held behind this conversion webhook: shop",
				"spec.finalizers [kubernetes]"}},
		BlockedBy: []report.BlockRef{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "gadgets.example.com"}}}
	f.ID = report.FindingID(f.Object, f.Check, f.RootCause.ID)
	r := &report.Report{Metadata: report.Metadata{GeneratedAt: now, Context: "test", ServerVersion: "v1.37.1"},
		Coverage: report.Coverage{Checks: []string{"stuck-terminating"}, Degraded: []report.Note{{Check: "stuck-terminating",
			Reason: `conversion webhook failing: list example.com/gadgets (conversion webhook for example.com/v1beta1, Kind=Gadget failed: Post "https://gadget-converter.gadget-system.svc:443/convert?timeout=30s": service "gadget-converter" not found)`}}},
		Findings: []report.Finding{f}}
	r.Normalize()
	return r
}

// TestTreeNamespaceConversionWebhook: the namespace's finding is the root although the CRD it
// names is drawn under it: the root line carries the finding ID, and the fix line says no
// automatic fix (emptying spec.finalizers would leave the objects in etcd).
func TestTreeNamespaceConversionWebhook(t *testing.T) {
	r := conversionNamespace()
	res := Build(r, r.Findings[0].Object, func(ref report.ObjectRef) string {
		if ref.Kind == "Namespace" {
			return "Terminating for 4m"
		}
		return "-"
	})
	res.Namespace = "shop"
	golden(t, "namespace-conversion.tree", draw(t, res, FormatTree))
	golden(t, "namespace-conversion.wide", draw(t, res, FormatWide))
	if len(res.Trees) != 1 || !res.Trees[0].Root() || len(res.Trees[0].Children) != 1 || res.Trees[0].Children[0].Finding != nil {
		t.Fatalf("want the namespace as the root over the CRD it names, got %+v", res.Trees)
	}
}

// TestTreeColored: on a terminal (cmd decides, with --no-color and NO_COLOR) the tree paints the
// severities as scan's table does and keeps its columns: without the colour codes it is the
// plain tree.
func TestTreeColored(t *testing.T) {
	res := Build(deadNodeChain(), ref("apps/v1", "Deployment", "web"), states)
	res.Namespace = "shop"
	var plain, colored bytes.Buffer
	if err := Render(&plain, res, FormatTree, false); err != nil {
		t.Fatal(err)
	}
	if err := Render(&colored, res, FormatTree, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(colored.String(), "\x1b[") || strings.Contains(plain.String(), "\x1b[") {
		t.Fatalf("colour codes: colored %q, plain %q", colored.String(), plain.String())
	}
	if got := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(colored.String(), ""); got != plain.String() {
		t.Errorf("the coloured tree without its colour codes:\n%s\nwant the plain one:\n%s", got, plain.String())
	}
}
