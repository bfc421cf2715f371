package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ciSample is sample() as a CI run sees it: one finding from a kustomize build, one held back by
// an annotation, one by a rule, and a check that could not read what it detects from.
func ciSample() *report.Report {
	r := sample()
	// sample() is normalized: cart-0 (stuck-preparing-normal) first, then web-1, web-2, web-3.
	r.Findings[1].Origin = &report.Origin{Path: "apps/shop/deployment.yaml", Repo: "https://example.com/shop.git", Ref: "main"}
	rule := 2
	web4 := r.Findings[1]
	web4.ID, web4.Object.Name, web4.Object.UID = "", "web-4", "uid-web-4"
	cart := r.Findings[0]
	cart.ID, cart.Object.Name, cart.Object.UID = "", "cart-1", "uid-cart-1"
	r.Suppressed = []report.Suppressed{
		{Finding: web4, Reason: "node-a is being drained by the vendor, ticket OPS-12",
			SuppressedBy: report.Suppressor{Source: report.SuppressedByAnnotation, Object: &report.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "shop"}}},
		{Finding: cart, Reason: "cart hook owned by team payments", SuppressedBy: report.Suppressor{Source: report.SuppressedByRule, File: "exemptions.yaml", Rule: &rule}},
	}
	r.Coverage.Skipped = []report.Note{{Check: "expectations-unsatisfied", Reason: "forbidden: list apps.kruise.io/clonesets", Inputs: []string{"kruise-workloads"}}}
	r.Normalize()
	return r
}

func TestCIGolden(t *testing.T) {
	for _, format := range []string{FormatJUnit, FormatSARIF, FormatTable} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Report(&buf, ciSample(), format, false); err != nil {
				t.Fatal(err)
			}
			golden(t, "ci."+format, buf.Bytes())
		})
	}
}

func TestJUnitCountsAndOrder(t *testing.T) {
	var buf bytes.Buffer
	if err := JUnit(&buf, ciSample()); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	var got []string
	for _, s := range doc.Suites {
		got = append(got, fmt.Sprintf("%s %d/%d/%d/%d", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped))
	}
	// Checks sorted; the 3 stuck pods fail, the suppressed one is skipped; the skipped check errs.
	want := []string{"expectations-unsatisfied 1/0/1/0", "stuck-preparing-normal 2/1/0/1", "stuck-terminating 4/3/0/1"}
	if !slices.Equal(got, want) {
		t.Errorf("suites %v, want %v", got, want)
	}
	if doc.Tests != 7 || doc.Failures != 4 || doc.Errors != 1 || doc.Skipped != 2 {
		t.Errorf("totals %+v", doc)
	}
	var again bytes.Buffer
	if err := JUnit(&again, ciSample()); err != nil || !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Errorf("two renderings of one report differ (%v)", err)
	}
}

func TestSARIF(t *testing.T) {
	doc := sarifOf(t, ciSample())
	for _, e := range validateSARIF(doc) {
		t.Error(e)
	}
	run := doc["runs"].([]any)[0].(map[string]any)
	rules := run["tool"].(map[string]any)["driver"].(map[string]any)["rules"].([]any)
	results := run["results"].([]any)
	if len(results) != 4 {
		t.Fatalf("%d results, want the 4 findings and no suppressed one", len(results))
	}
	r := ciSample()
	for i, x := range results {
		res := x.(map[string]any)
		f := r.Findings[i]
		if fp := res["fingerprints"].(map[string]any)[fingerprintKey]; fp != f.ID {
			t.Errorf("result %d fingerprint %v, want %s", i, fp, f.ID)
		}
		rule := rules[int(res["ruleIndex"].(float64))].(map[string]any)
		if rule["id"] != res["ruleId"] || rule["id"] != f.Check+"/"+f.RootCause.ID {
			t.Errorf("result %d: rule %v, ruleId %v", i, rule["id"], res["ruleId"])
		}
		if !strings.Contains(rule["help"].(map[string]any)["text"].(string), "kubectl workloaddoctor explain "+f.RootCause.ID) {
			t.Errorf("rule %v help does not point at explain", rule["id"])
		}
		loc := res["locations"].([]any)[0].(map[string]any)
		_, physical := loc["physicalLocation"]
		if physical != (f.Origin != nil) {
			t.Errorf("result %d (%s): physical location %v, origin %v", i, f.Object, physical, f.Origin)
		}
	}
}

// TestValidateSARIFCatches keeps the validator honest: each break of the schema is named.
func TestValidateSARIFCatches(t *testing.T) {
	doc := sarifOf(t, ciSample())
	run := doc["runs"].([]any)[0].(map[string]any)
	res := run["results"].([]any)[0].(map[string]any)
	res["level"] = "fatal"
	delete(res, "message")
	res["ruleIndex"] = -2.0
	run["findings"] = []any{}
	doc["version"] = "2.0.0"
	var got []string
	for _, e := range validateSARIF(doc) {
		got = append(got, e.Error())
	}
	for _, want := range []string{`$.version: want "2.1.0"`, `$.runs[0]: property "findings" is not defined`,
		`$.runs[0].results[0]: required property "message" missing`, `results[0].level: level fatal`, `results[0].ruleIndex: want an integer >= -1`} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no error %q among %q", want, got)
		}
	}
}

// sarifOf renders r as SARIF and decodes it.
func sarifOf(t *testing.T, r *report.Report) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := SARIF(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
