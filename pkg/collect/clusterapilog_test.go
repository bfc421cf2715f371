package collect

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestRefusedFinalizerLinesKeepsOnlyRefusalsNewestFirst(t *testing.T) {
	var in strings.Builder
	for i := range maxCAPILines + 20 {
		fmt.Fprintf(&in, "2026-06-12T11:00:%02dZ I0612 reconciling Machine fleet/m-%d\n", i%60, i)
		fmt.Fprintf(&in, "2026-06-12T11:00:%02dZ E0612 \"Reconciler error\" err=\"Machine.cluster.x-k8s.io \\\"m-%d\\\" is invalid: "+
			"metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted\"\n", i%60, i)
	}
	lines, err := refusedFinalizerLines(strings.NewReader(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != maxCAPILines || !strings.Contains(lines[0], `m-20\`) || !strings.Contains(lines[len(lines)-1], fmt.Sprintf(`m-%d\`, maxCAPILines+19)) {
		t.Fatalf("kept %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	for _, l := range lines {
		if strings.Contains(l, "reconciling") {
			t.Fatalf("kept a line without the refusal: %q", l)
		}
	}
}

// capiManager is the Cluster API core controller as its release's infrastructure-components.yaml
// installs it (config/manager/manager.yaml: container "manager"), and its leader Lease
// (controller-runtime's leader election, identity "<pod>_<uuid>").
func capiManager() (*appsv1.Deployment, *coordinationv1.Lease) {
	sel := map[string]string{"cluster.x-k8s.io/provider": "cluster-api"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-controller-manager"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.k8s.io/cluster-api/cluster-api-controller:v1.10.2"}}}}}}
	holder := "capi-controller-manager-6d8f9c7b5-q2w7x_0b6a2c1e-5d1f-4a8e-9d3c-2f7e1b0a9c8d"
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "controller-leader-election-capi"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	return dep, lease
}

func TestCollectSkipsTheClusterAPILogWithoutClusterAPI(t *testing.T) {
	dep, lease := capiManager()
	c := newFakeCluster(t, dep, lease)
	s := collect(t, c, allNamespaces, snapshot.InputControllers, snapshot.InputClusterAPILogs)
	if s.ClusterAPILog != nil || len(s.Unread) != 0 {
		t.Errorf("ClusterAPILog = %+v, unread %v: want nothing read when cluster.x-k8s.io is not served", s.ClusterAPILog, unread(s))
	}
}
