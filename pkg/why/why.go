// Package why diagnoses one object: `kubectl workloaddoctor why TYPE/NAME`. It resolves the type
// the way kubectl does, reads the object, runs the scan's own checks on a snapshot of the
// object's namespace, and keeps the findings about the object and the chain of stuck objects it
// waits on, down to the root cause.
//
// Why this gives the scan's verdict for the object: `why` does not re-implement a diagnosis. It
// runs scan.Run, the same collector stages (bulk lists, index, the reads the checks declare,
// evidence) and the same checks, on the scope `scan -n NAMESPACE` reads: the object's namespace
// (a Namespace's own name for a Namespace). A check judges an object only on what that scope
// reads (its pods, owners, dependents, events, and the cluster-wide inputs that are small:
// webhooks, APIServices, controllers' Leases), so the finding on the object, its evidence, its
// blockedBy chain and its ID are the ones `scan -n NAMESPACE` reports, and the ID is the one
// `fix` acts on. Pods are never listed cluster-wide: the bulk pod list is the namespace's,
// metadata-only, and only the pods the checks declare are read in full. Nodes are not listed
// either: the checks declare the nodes they judge (those of the pods read in full), and why
// reads each of them, with its heartbeat Lease, by name (collect.Options.NodesByName).
//
// What it costs: the namespace's lists plus one GET of the object and one per node named
// (measured in bench/ against scan -A, and in test/e2e why_test.go); two more for a custom
// resource whose conversion webhook fails (its CRD, then the object at the version it is stored
// at). The Deployments, StatefulSets and DaemonSets are listed in the namespace and where the
// kruise-manager and the Cluster API controller are configured to run. When a check searches
// every namespace's on what was read (stuck-terminating looking for the controller that must
// remove a finalizer, or for kwok's), they are read as Tables of names, containers and images,
// and only the matches in full (collect, Options.AsksWorkloads). A pod on a node that stopped
// heartbeating needs none of them.
//
// A cluster-scoped object (a Node, a PersistentVolume, a CRD, a cluster-scoped custom resource)
// is diagnosed on its own resource, read as `scan -A` reads it (snapshot.Scope.ClusterResources),
// and the one namespace its chain reaches (clusterScope): a bound volume's claim's, the namespace
// of a CRD's instances being deleted (one metadata-only list of them), else default, where the
// events about cluster-scoped objects are recorded. What the stuck-terminating check judges such
// an object on is all there: the object, the objects it waits on in that namespace and their pods,
// and the cluster-wide inputs. An object deleted with foreground or orphan propagation waits for
// dependents that may be pods of any namespace, and a CRD's instances may be in several
// namespaces: those need the whole cluster, so `why` refuses them and points at `scan -A`.
package why

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ErrNotFound is the error of Run when the object does not exist (any more).
var ErrNotFound = errors.New("not found")

// Target is the object asked about, its type resolved.
type Target struct {
	Resource   schema.GroupVersionResource
	Kind       string
	Namespaced bool
	Namespace  string
	Name       string
}

// ParseArgs splits the command line's TYPE/NAME or TYPE NAME.
func ParseArgs(args []string) (typ, name string, err error) {
	switch len(args) {
	case 1:
		t, n, ok := strings.Cut(args[0], "/")
		if !ok || t == "" || n == "" {
			return "", "", fmt.Errorf("want TYPE/NAME or TYPE NAME, got %q", args[0])
		}
		return t, n, nil
	case 2:
		if strings.Contains(args[0], "/") || args[0] == "" || args[1] == "" {
			return "", "", fmt.Errorf("want TYPE/NAME or TYPE NAME, got %q", strings.Join(args, " "))
		}
		return args[0], args[1], nil
	}
	return "", "", fmt.Errorf("want TYPE/NAME or TYPE NAME, got %d arguments", len(args))
}

// Resolve finds the resource typ names through the RESTMapper, as kubectl does: a resource
// (plural or singular), a short name or a kind, optionally qualified by group (deployments.apps).
// namespace is the one -n or the kubeconfig gave; a cluster-scoped target drops it.
func Resolve(mapper meta.RESTMapper, typ, name, namespace string) (Target, error) {
	gvr, err := mapper.ResourceFor(schema.ParseGroupResource(typ).WithVersion(""))
	if err != nil {
		return Target{}, fmt.Errorf("the server doesn't have a resource type %q", typ)
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return Target{}, fmt.Errorf("resolve the kind of %s: %w", gvr.GroupResource(), err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return Target{}, fmt.Errorf("resolve %s: %w", gvk.Kind, err)
	}
	t := Target{Resource: mapping.Resource, Kind: gvk.Kind, Name: name,
		Namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}
	if t.Namespaced {
		t.Namespace = namespace
	}
	return t, nil
}

func (t Target) isNamespace() bool {
	return t.Resource.Group == "" && t.Resource.Resource == "namespaces"
}

// clusterScoped says whether the target is a cluster-scoped object other than a Namespace, whose
// scope depends on the object (clusterScope).
func (t Target) clusterScoped() bool {
	return !t.Namespaced && !t.isNamespace()
}

// scopeNamespace is the namespace whose scan diagnoses a namespaced target or a Namespace.
func (t Target) scopeNamespace() string {
	if t.isNamespace() {
		return t.Name
	}
	return t.Namespace
}

// String names the target the way kubectl does in its errors.
func (t Target) String() string {
	s := t.Resource.GroupResource().String() + " \"" + t.Name + "\""
	if t.Namespaced {
		s += " in namespace \"" + t.Namespace + "\""
	}
	return s
}

// Result is one object's diagnosis.
type Result struct {
	// Object is the object asked about, as read just before the scan.
	Object report.ObjectRef
	// Namespace is the namespace the scan read; ClusterResources the cluster-scoped resources it
	// read besides, for a cluster-scoped object.
	Namespace        string
	ClusterResources []schema.GroupResource
	// Report holds the findings the answer is made of, in chain order (the object's own first,
	// the root last), with the whole scan's metadata and coverage.
	Report *report.Report
	Trees  []*Node
	// HeldBy are the stuck objects whose findings wait on this object.
	HeldBy []report.ObjectRef
	// Finalizers are the object's finalizers, each with who added it.
	Finalizers []Finalizer
	// Now is the scan's clock, for ages; ClockOffset how far it is ahead of the local one.
	Now         time.Time
	ClockOffset time.Duration
}

// Run reads the target and diagnoses it. opts.Scope is replaced by the target's scope: its
// namespace, or for a cluster-scoped object what clusterScope says.
func Run(ctx context.Context, c collect.Clients, t Target, opts scan.Options) (*Result, error) {
	u, err := get(ctx, c, t)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s %w", t, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", t, err)
	}
	m, err := metadataOf(t, u)
	if err != nil {
		return nil, err
	}
	sc := scope{namespace: t.scopeNamespace()}
	if t.clusterScoped() {
		var instances *schema.GroupVersionResource
		if sc, instances, err = clusterScope(t, u); err != nil {
			return nil, err
		}
		if instances != nil {
			if sc, err = instancesScope(ctx, c, sc, *instances); err != nil {
				return nil, err
			}
		}
	}
	opts.Scope.Namespace, opts.Scope.AllNamespaces, opts.Scope.LabelSelector = sc.namespace, false, ""
	opts.Scope.ClusterResources = sc.cluster
	// The nodes the checks name are read one by one; a Node asked about is read with the others,
	// as scan -A reads it.
	opts.NodesByName = !slices.Contains(sc.cluster, schema.GroupResource{Resource: "nodes"})
	r, snap, err := scan.Run(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	res := fromScan(r, snap, t, u, m)
	res.Namespace, res.ClusterResources = sc.namespace, sc.cluster
	return res, nil
}

// FromScan is the diagnosis of the object u from a scan that read it: why --from-bundle replays
// the whole scan a bundle captured and answers from its report, since a replay can answer only
// the requests the capture made. namespace names what the scan read, for the answer's text.
func FromScan(r *report.Report, snap *snapshot.Snapshot, t Target, u *unstructured.Unstructured, namespace string) (*Result, error) {
	m, err := metadataOf(t, u)
	if err != nil {
		return nil, err
	}
	res := fromScan(r, snap, t, u, m)
	res.Namespace = namespace
	return res, nil
}

// metadataOf decodes the metadata of u, the object t names.
func metadataOf(t Target, u *unstructured.Unstructured) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	if raw, ok := u.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &m.ObjectMeta); err != nil {
			return nil, fmt.Errorf("decode the metadata of %s: %w", t, err)
		}
	}
	return m, nil
}

func fromScan(r *report.Report, snap *snapshot.Snapshot, t Target, u *unstructured.Unstructured, m *metav1.PartialObjectMetadata) *Result {
	obj := report.ObjectRef{APIVersion: t.Resource.GroupVersion().String(), Kind: t.Kind, Namespace: m.Namespace, Name: m.Name,
		UID: string(m.UID), ResourceVersion: m.ResourceVersion}
	res := Build(r, obj, stateIn(snap, obj, ownState(u, snap.Now)))
	res.Finalizers = finalizers(m)
	res.Now, res.ClockOffset = snap.Now, snap.ClockOffset
	return res
}

// crds is where a custom resource's versions are declared.
var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// get reads the target at the version discovery prefers. A custom resource whose conversion
// webhook fails cannot be read at any version but the one etcd stores it at: the apiserver
// calls the webhook only for an object whose stored version differs from the one asked
// (apiextensions-apiserver v1.37.1 pkg/apiserver/conversion, webhookConverter.Convert). The
// scan still lists and judges such an object, so why reads it at its CRD's storage version then.
func get(ctx context.Context, c collect.Clients, t Target) (*unstructured.Unstructured, error) {
	u, err := c.Dynamic.Resource(t.Resource).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	if err == nil || !fault.ConversionFailed(err) {
		return u, err
	}
	crd, cerr := c.Dynamic.Resource(crds).Get(ctx, t.Resource.GroupResource().String(), metav1.GetOptions{})
	if cerr != nil {
		return nil, err
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v, _ := v.(map[string]any)
		name, _ := v["name"].(string)
		if stored, _ := v["storage"].(bool); !stored || name == t.Resource.Version {
			continue
		}
		at := t.Resource
		at.Version = name
		if u, serr := c.Dynamic.Resource(at).Namespace(t.Namespace).Get(ctx, t.Name, metav1.GetOptions{}); serr == nil {
			return u, nil
		}
	}
	return nil, err
}
