package audit

import (
	"slices"
	"testing"
)

// TestMetricsCarryNoClusterLabel keeps the auditor's series free of anything naming the cluster:
// one auditor runs per cluster, and the fleet view is Prometheus's, whose scrape config adds the
// cluster label (external_labels or relabelling). A series that carried its own cluster, context
// or server label would duplicate it, or clash with it.
func TestMetricsCarryNoClusterLabel(t *testing.T) {
	clusterish := []string{"cluster", "cluster_id", "clusterID", "context", "server", "apiserver", "kube_context"}
	for _, f := range families() {
		for _, l := range f.labels {
			if slices.Contains(clusterish, l) {
				t.Errorf("metric %s has label %q: the scrape's cluster label names the cluster", f.name, l)
			}
		}
	}
}
