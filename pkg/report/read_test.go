package report

import "testing"

func TestParse(t *testing.T) {
	good := `{"apiVersion":"workloaddoctor.io/v1alpha1","kind":"Report","metadata":{"generatedAt":"2026-01-01T00:00:00Z"},
"findings":[{"id":"wd-1","check":"stuck-terminating","severity":"error","object":{"apiVersion":"v1","kind":"Pod","namespace":"a","name":"p","uid":"u","resourceVersion":"7"},
"rootCause":{"id":"node-missing"},"fixes":[{"action":"force-delete","risk":"high"}]}]}`
	r, err := Parse([]byte(good), "r.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Object.ResourceVersion != "7" || r.Summary.Total != 1 {
		t.Errorf("parsed %+v", r)
	}
	yamlDoc := "apiVersion: workloaddoctor.io/v1alpha1\nkind: Report\nfindings: []\n"
	if _, err := Parse([]byte(yamlDoc), "r.yaml"); err != nil {
		t.Errorf("yaml report: %v", err)
	}
	for name, doc := range map[string]string{
		"not json":           "{",
		"other kind":         `{"apiVersion":"v1","kind":"Pod"}`,
		"finding without id": `{"apiVersion":"workloaddoctor.io/v1alpha1","kind":"Report","findings":[{"check":"x","object":{"kind":"Pod","name":"p"}}]}`,
	} {
		if _, err := Parse([]byte(doc), name); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}
