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

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
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
// discovery that fails whole is retried; when it still fails, or some groups fail (aggregated
// APIs that are down, not retried: they stay down a while), this is noted for the objects input
// and for the inputs of those groups (discoveryErr); the groups found are still used.
func (col *collector) discover(ctx context.Context) {
	var (
		groups []*metav1.APIGroup
		lists  []*metav1.APIResourceList
		gdf    *discovery.ErrGroupDiscoveryFailed
		failed error
	)
	err := col.retry.Do(ctx, func(context.Context) error {
		groups, lists, failed = col.c.Discovery.ServerGroupsAndResources()
		if errors.As(failed, &gdf) {
			return nil
		}
		return failed
	})
	if err != nil {
		col.discErr = fmt.Errorf("discovery: %w", err)
		return
	}
	if gdf != nil {
		col.failedGroups = map[string]bool{}
		var names []string
		for gv := range gdf.Groups {
			names = append(names, gv.String())
			col.failedGroups[gv.Group] = true
		}
		sort.Strings(names)
		// A stated limit: an API that is down is what the checks diagnose, not a blind scan.
		col.discErr = fault.LimitError(fmt.Sprintf("discovery failed for %s", strings.Join(names, ", ")))
	}
	inPreferenceOrder(groups, lists)
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
}

// discoveryErr is why whether group is served is not known: discovery failed whole, or for that
// group. An input of an optional API reports it rather than taking the API for not installed.
func (col *collector) discoveryErr(group string) error {
	if col.discErr != nil && (col.failedGroups == nil || col.failedGroups[group]) {
		return col.discErr
	}
	return nil
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

// inPreferenceOrder sorts the resource lists by group, and within a group in the order the
// server prefers its versions (aggregated discovery hands them over from a map), so that a
// resource served in several versions is always read at the same one: the preferred, which is
// also the version the namespace controller and kubectl use.
func inPreferenceOrder(groups []*metav1.APIGroup, lists []*metav1.APIResourceList) {
	rank := map[string]int{}
	for i, g := range groups {
		for j, v := range g.Versions {
			rank[v.GroupVersion] = i<<16 | (j + 1)
		}
		rank[g.PreferredVersion.GroupVersion] = i << 16
	}
	sort.SliceStable(lists, func(i, j int) bool {
		ri, oki := rank[lists[i].GroupVersion]
		rj, okj := rank[lists[j].GroupVersion]
		if oki != okj {
			return oki
		}
		if ri != rj {
			return ri < rj
		}
		return lists[i].GroupVersion < lists[j].GroupVersion
	})
}
