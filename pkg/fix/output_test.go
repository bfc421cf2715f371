package fix

import (
	"bytes"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestParseReport(t *testing.T) {
	good := `{"apiVersion":"workloaddoctor.io/v1alpha1","kind":"Report","metadata":{"generatedAt":"2026-01-01T00:00:00Z"},
"findings":[{"id":"wd-1","check":"stuck-terminating","severity":"error","object":{"apiVersion":"v1","kind":"Pod","namespace":"a","name":"p","uid":"u","resourceVersion":"7"},
"rootCause":{"id":"node-missing"},"fixes":[{"action":"force-delete","risk":"high"}]}]}`
	r, err := ParseReport([]byte(good), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Object.ResourceVersion != "7" || r.Summary.Total != 1 {
		t.Errorf("parsed %+v", r)
	}
	yamlDoc := "apiVersion: workloaddoctor.io/v1alpha1\nkind: Report\nfindings: []\n"
	if _, err := ParseReport([]byte(yamlDoc), "r.yaml"); err != nil {
		t.Errorf("yaml report: %v", err)
	}
	for name, doc := range map[string]string{
		"not json":           "{",
		"other kind":         `{"apiVersion":"v1","kind":"Pod"}`,
		"finding without id": `{"apiVersion":"workloaddoctor.io/v1alpha1","kind":"Report","findings":[{"check":"x","object":{"kind":"Pod","name":"p"}}]}`,
	} {
		if _, err := ParseReport([]byte(doc), name); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestPrintPlanAndResults(t *testing.T) {
	f := finding("wd-a", "stuck-terminating", "finalizer-owner-missing", pod("shop", "a", "ua", "10"), rmFin("example.com/x"))
	f.Summary = "pod stuck Terminating"
	steps, refused := Plan(NewCatalog(), []report.Finding{f}, Selection{IDs: []string{"wd-a", "wd-gone"}})
	var buf bytes.Buffer
	PrintPlan(&buf, steps, refused)
	for _, want := range []string{"Plan: 1 action", "remove-finalizer pod/a -n shop (risk: low)", `remove finalizer "example.com/x"`,
		"resolves: wd-a (stuck-terminating/finalizer-owner-missing)", "Not planned (1)", "wd-gone: no finding with this ID"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	rs := append(PlannedResults(steps), refused...)
	if err := PrintResults(&buf, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ACTION", "remove-finalizer", "dry-run", "refused", "2 actions: 0 applied, 0 already resolved, 1 refused, 0 failed, 1 dry run."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("results lack %q:\n%s", want, buf.String())
		}
	}
}
