package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestSelectContexts(t *testing.T) {
	all := []string{"dev-a", "prod-eu", "prod-legacy", "prod-us", "staging"}
	for _, tc := range []struct {
		patterns []string
		all      bool
		want     []string
		err      string
	}{
		{patterns: []string{"prod-*"}, want: []string{"prod-eu", "prod-legacy", "prod-us"}},
		{patterns: []string{"prod-*", "!prod-legacy"}, want: []string{"prod-eu", "prod-us"}},
		{patterns: []string{"staging", "dev-?"}, want: []string{"dev-a", "staging"}},
		{patterns: []string{"!prod-*"}, want: []string{"dev-a", "staging"}},
		{all: true, want: all},
		{all: true, patterns: []string{"!dev-*", "!staging"}, want: []string{"prod-eu", "prod-legacy", "prod-us"}},
		// A typo must not read as an empty, healthy fleet.
		{patterns: []string{"prod-uss"}, err: `context "prod-uss" is not in the kubeconfig`},
		{patterns: []string{"qa-*"}, err: "no kubeconfig context matches qa-*"},
		{patterns: []string{"prod-*", "!prod-*"}, err: "no kubeconfig context matches"},
	} {
		got, err := selectContexts(all, tc.patterns, tc.all)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.patterns, err, tc.err)
			}
		case err != nil || !slices.Equal(got, tc.want):
			t.Errorf("%v (all %v): %v, %v; want %v", tc.patterns, tc.all, got, err, tc.want)
		}
	}
}

func TestFleetExit(t *testing.T) {
	row := func(status string, exit int) report.ClusterResult {
		return report.ClusterResult{Context: fmt.Sprintf("%s-%d", status, exit), Status: status, ExitCode: exit}
	}
	for _, tc := range []struct {
		rows []report.ClusterResult
		want int
	}{
		{[]report.ClusterResult{row(report.ClusterScanned, 0), row(report.ClusterScanned, 0)}, 0},
		{[]report.ClusterResult{row(report.ClusterScanned, 0), row(report.ClusterScanned, 2)}, 2},
		// Findings elsewhere do not hide a cluster that was not looked at.
		{[]report.ClusterResult{row(report.ClusterScanned, 2), row(report.ClusterUnreachable, 1)}, 1},
		{[]report.ClusterResult{row(report.ClusterScanned, 2), row(report.ClusterScanned, 1)}, 1},
		{[]report.ClusterResult{row(report.ClusterForbidden, 1)}, 1},
	} {
		if got := exitCode(fleetExit(&report.FleetReport{Clusters: tc.rows})); got != tc.want {
			t.Errorf("%+v: exit %d, want %d", tc.rows, got, tc.want)
		}
	}
}

func TestClusterStatus(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	gr := schema.GroupResource{Resource: "namespaces"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("read namespace: %w", refused), report.ClusterUnreachable},
		{&url.Error{Op: "Get", URL: "https://x", Err: &net.DNSError{Err: "no such host", Name: "x"}}, report.ClusterUnreachable},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), report.ClusterUnreachable},
		{apierrors.NewUnauthorized("Unauthorized"), report.ClusterForbidden},
		{apierrors.NewForbidden(gr, "kube-system", errors.New("no")), report.ClusterForbidden},
		{errors.New("x509: certificate signed by unknown authority"), report.ClusterError},
	} {
		if got := clusterStatus(context.Background(), tc.err); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestFleetRefusesOneClusterFormats: JUnit and SARIF describe one cluster, so a fleet scan asked
// for them fails before it reads any context, with one line that says which formats it writes.
func TestFleetRefusesOneClusterFormats(t *testing.T) {
	for _, format := range []string{"junit", "sarif"} {
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		root := NewRootCommand(streams)
		root.SetArgs([]string{"scan", "--contexts", "prod-*", "-o", format})
		root.SilenceErrors, root.SilenceUsage = true, true
		err := root.Execute()
		var exit *ExitError
		if !errors.As(err, &exit) || exit.Code != ExitFailure || !strings.Contains(err.Error(), "want one of table, wide, json, yaml") {
			t.Errorf("-o %s: %v, want exit 1 naming the fleet formats", format, err)
		}
	}
}
