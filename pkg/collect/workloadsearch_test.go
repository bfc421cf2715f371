package collect

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// deploymentTable is a Deployment Table as kube-apiserver v1.37 prints it without objects
// (pkg/printers/internalversion/printers.go, AddHandlers' deploymentColumnDefinitions and
// printDeployment: container names and images each joined by commas), decoded from JSON.
func deploymentTable(rows ...[3]string) *metav1.Table {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string"}, {Name: "Ready", Type: "string"}, {Name: "Up-to-date", Type: "integer"},
		{Name: "Available", Type: "integer"}, {Name: "Age", Type: "string"}, {Name: "Containers", Type: "string", Priority: 1},
		{Name: "Images", Type: "string", Priority: 1}, {Name: "Selector", Type: "string", Priority: 1},
	}}
	for _, r := range rows {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{r[0], "1/1", float64(1), float64(1), "5m", r[1], r[2], "app=" + r[0]},
			Object: runtime.RawExtension{}})
	}
	return t
}

func TestTableMatches(t *testing.T) {
	table := deploymentTable(
		[3]string{"operator", "manager,proxy", "registry.example/team/operator:v1.2,registry.example/proxy:1"},
		[3]string{"web", "web", "nginx@sha256:0123"},
		[3]string{"agent", "agent", "registry.example:5000/infra/node-agent:2"},
	)
	cases := []struct {
		q    snapshot.WorkloadQuery
		want []string
	}{
		{snapshot.WorkloadQuery{Name: "web"}, []string{"web"}},
		{snapshot.WorkloadQuery{Name: "manager"}, nil},
		{snapshot.WorkloadQuery{Container: "proxy"}, []string{"operator"}},
		{snapshot.WorkloadQuery{Container: "prox"}, nil},
		{snapshot.WorkloadQuery{ImageRepository: "nginx"}, []string{"web"}},
		{snapshot.WorkloadQuery{ImageRepository: "node-agent"}, []string{"agent"}},
		{snapshot.WorkloadQuery{ImageRepository: "proxy"}, []string{"operator"}},
		{snapshot.WorkloadQuery{ImageRepository: "infra"}, nil},
	}
	for _, c := range cases {
		got, err := tableMatches(table, []snapshot.WorkloadQuery{c.q})
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, %v; want %q", c.q, got, err, c.want)
		}
	}
	// Several searches name a row once.
	if got, _ := tableMatches(table, []snapshot.WorkloadQuery{{Name: "operator"}, {Container: "manager"}, {Name: "web"}}); !slices.Equal(got, []string{"operator", "web"}) {
		t.Errorf("several searches: %q", got)
	}

	// A table the matches cannot be read from is an error, which lists the workloads whole.
	noImages := deploymentTable([3]string{"web", "web", "nginx"})
	noImages.ColumnDefinitions[6].Name = "Image"
	short := deploymentTable([3]string{"web", "web", "nginx"})
	short.Rows[0].Cells = short.Rows[0].Cells[:5]
	for name, bad := range map[string]*metav1.Table{"no Images column": noImages, "a row without the cells": short, "no columns": {}} {
		if got, err := tableMatches(bad, []snapshot.WorkloadQuery{{Name: "web"}}); err == nil {
			t.Errorf("%s: matched %q, want an error", name, got)
		}
	}
}
