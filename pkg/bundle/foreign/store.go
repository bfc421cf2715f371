package foreign

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// resource is what a capture holds of one group and resource, and where it looked for it.
type resource struct {
	group, name, kind string
	// versions are served in this order, the first preferred.
	versions   []string
	namespaced bool
	// objects by namespace ("" for cluster-scoped objects).
	objects map[string][]*unstructured.Unstructured
	// listed are the namespaces the capture listed this resource in, whole: an object missing
	// there is known absent. all: every namespace (or, cluster-scoped, every object) was listed.
	listed map[string]bool
	all    bool
	// seen are the objects added, by namespace/name: a capture may hold one in several files.
	seen map[string]bool
}

func (r *resource) add(u *unstructured.Unstructured) {
	ns := ""
	if r.namespaced {
		ns = u.GetNamespace()
	}
	if key := ns + "/" + u.GetName(); !r.seen[key] {
		r.seen[key] = true
		r.objects[ns] = append(r.objects[ns], u)
	}
}

func (r *resource) addVersion(v string) {
	if v != "" && !slices.Contains(r.versions, v) {
		r.versions = append(r.versions, v)
	}
}

// store is an opened capture: the objects by resource, and what else the capture records.
type store struct {
	resources map[schema.GroupResource]*resource
	// namespaces are the namespaces the capture names; namespacesAll says they are every
	// namespace of the cluster, so a resource listed in each was listed cluster-wide.
	namespaces    []string
	namespacesAll bool
	// logs by "namespace/pod/container", "-previous" appended for the previous instance's.
	logs    map[string]string
	version *version.Info
	// warnings say what the reader skipped or assumed.
	warnings []string
}

func newStore() *store {
	return &store{resources: map[schema.GroupResource]*resource{}, logs: map[string]string{}}
}

// resource returns the entry for gr, making it from the built-in table or the given facts.
func (s *store) resource(gr schema.GroupResource, kind string, namespaced bool) *resource {
	if r, ok := s.resources[gr]; ok {
		return r
	}
	r := &resource{group: gr.Group, name: gr.Resource, kind: kind, namespaced: namespaced,
		objects: map[string][]*unstructured.Unstructured{}, listed: map[string]bool{}, seen: map[string]bool{}}
	if b, ok := builtinByResource(gr); ok {
		r.kind, r.namespaced, r.versions = b.kind, b.namespaced, append([]string(nil), b.versions...)
	}
	s.resources[gr] = r
	return r
}

// finish settles what the capture read: a namespaced resource listed in every namespace of a
// capture that names them all was listed cluster-wide.
func (s *store) finish() {
	for _, r := range s.resources {
		if r.all || !r.namespaced || !s.namespacesAll || len(s.namespaces) == 0 {
			continue
		}
		all := true
		for _, ns := range s.namespaces {
			all = all && r.listed[ns]
		}
		r.all = all
	}
}

// covers reports whether the capture listed r in namespace ns whole ("" for all namespaces, or
// the cluster-scoped objects), except the namespaces in exclude.
func (s *store) covers(r *resource, ns string, exclude map[string]bool) bool {
	if r.all {
		return true
	}
	if !r.namespaced {
		return false
	}
	if ns != "" {
		// A namespace the capture's complete namespace list lacks did not exist: the apiserver
		// would have answered an empty list there too.
		return r.listed[ns] || s.namespacesAll && len(s.namespaces) > 0 && !slices.Contains(s.namespaces, ns)
	}
	if !s.namespacesAll || len(s.namespaces) == 0 {
		return false
	}
	for _, n := range s.namespaces {
		if !exclude[n] && !r.listed[n] {
			return false
		}
	}
	return true
}

// clusterID is the kube-system namespace's UID, when captured.
func (s *store) clusterID() string {
	if r, ok := s.resources[schema.GroupResource{Resource: "namespaces"}]; ok {
		for _, u := range r.objects[""] {
			if u.GetName() == metav1.NamespaceSystem {
				return string(u.GetUID())
			}
		}
	}
	return ""
}

// timeKeys are the fields that record when something already happened. deletionTimestamp is not
// one: a graceful delete sets it to the end of the grace period, in the future.
var timeKeys = map[string]bool{
	"creationTimestamp": true, "time": true, "lastTimestamp": true, "firstTimestamp": true,
	"eventTime": true, "lastObservedTime": true, "lastTransitionTime": true, "lastUpdateTime": true,
	"lastHeartbeatTime": true, "lastProbeTime": true, "renewTime": true, "acquireTime": true,
	"startedAt": true, "finishedAt": true, "startTime": true, "completionTime": true,
	"lastScheduleTime": true, "lastSuccessfulTime": true,
}

// newest is the latest time any captured object records having happened: the capture was made
// at that time or later.
func (s *store) newest() time.Time {
	var latest time.Time
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if str, ok := x.(string); ok && timeKeys[k] {
					if t, err := time.Parse(time.RFC3339Nano, str); err == nil && t.After(latest) {
						latest = t
					}
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, r := range s.resources {
		for _, objs := range r.objects {
			for _, u := range objs {
				walk(u.Object)
			}
		}
	}
	return latest.UTC()
}

// sortedNames returns the keys of m, sorted.
// groupVersion splits an apiVersion into group and version.
func groupVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}
