package checks

import (
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestDocument(t *testing.T) {
	md := `# A check

Wrapped
lines.

Second paragraph.

## rc-a: Root cause A

It
happens.

References:
- ref#1
- ref#2

## rc-b: Root cause B

Also.
`
	info := Info{ID: "c", RootCauses: []RootCause{{ID: "rc-a", Severity: report.SeverityError}, {ID: "rc-b", Severity: report.SeverityInfo}}}
	got, err := Document(info, md)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "A check" || got.Description != "Wrapped lines.\n\nSecond paragraph." {
		t.Errorf("check = %q / %q", got.Title, got.Description)
	}
	a, b := got.RootCauses[0], got.RootCauses[1]
	if a.Title != "Root cause A" || a.Description != "It happens." || strings.Join(a.References, ",") != "ref#1,ref#2" || a.Severity != report.SeverityError {
		t.Errorf("rc-a = %+v", a)
	}
	if b.Description != "Also." || b.References != nil {
		t.Errorf("rc-b = %+v", b)
	}
	if info.RootCauses[0].Title != "" {
		t.Error("Document changed the caller's root causes")
	}
	for name, bad := range map[string]string{
		"no title":          "A check\n",
		"undocumented":      "# A check\n\n## rc-a: A\n",
		"unknown":           md + "\n## rc-c: C\n",
		"repeated":          md + "\n## rc-b: B again\n",
		"text after a list": "# A check\n\n## rc-a: A\n\nReferences:\n- r\nmore\n\n## rc-b: B\n",
	} {
		if _, err := Document(info, bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
