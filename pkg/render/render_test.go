package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func sample() *report.Report {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	pod := func(name, node string) report.Finding {
		return report.Finding{
			Check: "stuck-terminating", Severity: report.SeverityError, Node: node,
			Object:  report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name, UID: "uid-" + name},
			Since:   now.Add(-42 * time.Minute),
			Summary: "pod " + name + " Terminating for 42m on a deleted node",
			RootCause: report.RootCause{ID: "node-missing", Message: "The node is gone.",
				Evidence: []string{"node " + node + " does not exist", "deletionTimestamp 2026-11-21T11:18:00Z"}},
			Fixes: []report.Fix{{Action: "force-delete", Description: "delete with grace period 0", Risk: report.RiskLow}},
		}
	}
	r := &report.Report{
		Metadata: report.Metadata{GeneratedAt: now, Context: "demo", ServerVersion: "v1.37.1", ClusterID: "6c1f3e0a-2b7d-4e5f-9a8b-0c1d2e3f4a5b"},
		Coverage: report.Coverage{Checks: []string{"stuck-preparing-normal", "stuck-terminating"},
			Degraded: []report.Note{{Check: "stuck-terminating", Reason: "forbidden: list nodes"}}},
		Findings: []report.Finding{
			pod("web-1", "node-a"), pod("web-2", "node-a"), pod("web-3", "node-b"),
			{
				Check: "stuck-preparing-normal", Severity: report.SeverityWarning,
				Object:  report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "cart-0", UID: "uid-cart"},
				Owner:   &report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "cart"},
				Since:   now.Add(-3 * time.Hour),
				Summary: "pod cart-0 PreparingNormal for 3h",
				RootCause: report.RootCause{ID: "prenormal-hook-pending", Message: "The preNormal hook is not satisfied.",
					Evidence: []string{"finalizer example.com/ready is missing"}, References: []string{"openkruise/kruise#2057"}},
			},
		},
	}
	r.Normalize()
	return r
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
		t.Fatalf("%v (run go test ./pkg/render -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	for _, format := range []string{FormatTable, FormatWide, FormatJSON, FormatYAML} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Report(&buf, sample(), format, false); err != nil {
				t.Fatal(err)
			}
			golden(t, "report."+format, buf.Bytes())
		})
	}
	t.Run("empty", func(t *testing.T) {
		r := &report.Report{Metadata: report.Metadata{GeneratedAt: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}}
		r.Normalize()
		var buf bytes.Buffer
		if err := Report(&buf, r, FormatTable, false); err != nil {
			t.Fatal(err)
		}
		golden(t, "empty.table", buf.Bytes())
	})
}

func TestTableGroupsPodsByNode(t *testing.T) {
	var buf bytes.Buffer
	if err := Report(&buf, sample(), FormatTable, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "2 pods on node/node-a") || strings.Contains(out, "web-2") {
		t.Errorf("pods on one dead node are not folded into one line:\n%s", out)
	}
	buf.Reset()
	if err := Report(&buf, sample(), FormatWide, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "web-2") {
		t.Errorf("wide output must list every pod:\n%s", buf.String())
	}
}

func TestYAMLIsTheJSONDocument(t *testing.T) {
	var j, y bytes.Buffer
	if err := Report(&j, sample(), FormatJSON, false); err != nil {
		t.Fatal(err)
	}
	if err := Report(&y, sample(), FormatYAML, false); err != nil {
		t.Fatal(err)
	}
	fromYAML, err := yaml.YAMLToJSON(y.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(j.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromYAML, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("yaml and json documents differ:\n%s\n%s", ja, jb)
	}
}

func TestColor(t *testing.T) {
	var plain, colored bytes.Buffer
	if err := Report(&plain, sample(), FormatTable, false); err != nil {
		t.Fatal(err)
	}
	if err := Report(&colored, sample(), FormatTable, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("uncoloured table has ANSI codes")
	}
	if !strings.Contains(colored.String(), "\x1b[") {
		t.Error("coloured table has no ANSI codes")
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Report(&bytes.Buffer{}, sample(), "xml", false); err == nil {
		t.Error("unknown format accepted")
	}
}
