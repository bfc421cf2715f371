package collect

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Resources of optional APIs that the collector reads whole.
var (
	apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	capiCluster = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
)

// readAPIServices reads the aggregated APIServices, when the cluster serves them.
func (col *collector) readAPIServices(ctx context.Context) error {
	if err := col.discoveryErr(apiServices.Group); err != nil {
		return err
	}
	if !col.snap.Installed[apiServices.Group] {
		return nil
	}
	out, err := col.listUnstructured(ctx, apiServices, "")
	col.add(func(s *snapshot.Snapshot) { s.APIServices = out })
	return err
}

// readClusters reads Cluster API Clusters in scope, when the cluster serves them.
func (col *collector) readClusters(ctx context.Context) error {
	if err := col.discoveryErr(capiCluster.Group); err != nil {
		return err
	}
	if !col.served(capiCluster) {
		return nil
	}
	items, err := col.listUnstructured(ctx, capiCluster, col.namespace())
	col.add(func(s *snapshot.Snapshot) { s.Clusters = items })
	return err
}
