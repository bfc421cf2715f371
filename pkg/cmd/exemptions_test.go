package cmd

import (
	"bytes"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/exempt"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Owners not read are said on stderr only where exemptions are in use.
func TestPrintWarnings(t *testing.T) {
	unread := report.Warning{Reason: exempt.WarnUnread, Message: "the scan did not read shop/replicaset/web-1a"}
	expired := report.Warning{Reason: exempt.WarnExpired, Message: "rules[0] of ex.yaml expired"}
	for _, tc := range []struct {
		name string
		r    report.Report
		want string
	}{
		{"nothing in use", report.Report{Warnings: []report.Warning{unread}}, ""},
		{"something suppressed", report.Report{Warnings: []report.Warning{unread}, Suppressed: []report.Suppressed{{}}},
			"warning: exemption-holder-not-read: the scan did not read shop/replicaset/web-1a\n"},
		{"another warning", report.Report{Warnings: []report.Warning{expired, unread}},
			"warning: exemption-expired: rules[0] of ex.yaml expired\nwarning: exemption-holder-not-read: the scan did not read shop/replicaset/web-1a\n"},
	} {
		var b bytes.Buffer
		printWarnings(&b, &tc.r)
		if b.String() != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}
