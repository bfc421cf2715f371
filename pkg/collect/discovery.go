package collect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// API groups whose presence the checks care about.
const (
	GroupKruise     = kruise.Group
	GroupClusterAPI = "cluster.x-k8s.io"
)

type discovered struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// discover records the API groups the cluster serves and the resources that can be listed. A
// group whose discovery fails is noted for the objects input; the others are still used.
func (col *collector) discover(ctx context.Context) {
	_, lists, err := col.c.Discovery.ServerGroupsAndResources()
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			col.discErr = fmt.Errorf("discovery: %w", err)
			return
		}
		// Some aggregated APIs are down; the rest is still usable.
		var failed []string
		for gv := range gdf.Groups {
			failed = append(failed, gv.String())
		}
		sort.Strings(failed)
		col.discErr = fmt.Errorf("discovery failed for %s", strings.Join(failed, ", "))
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		col.snap.Installed[gv.Group] = true
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			col.resources = append(col.resources, discovered{
				gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced,
			})
		}
	}
	_ = ctx
}

func hasVerb(verbs metav1.Verbs, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// served reports whether discovery found the resource at that version.
func (col *collector) served(gvr schema.GroupVersionResource) bool {
	for _, r := range col.resources {
		if r.gvr == gvr {
			return true
		}
	}
	return false
}

// groupVersions returns the versions of group that discovery found, plus the known ones, as
// group/version strings.
func (col *collector) groupVersions(group string, known ...string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if gv := group + "/" + v; !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	for _, v := range known {
		add(v)
	}
	for _, r := range col.resources {
		if r.gvr.Group == group {
			add(r.gvr.Version)
		}
	}
	return out
}
