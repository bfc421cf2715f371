package collect

import (
	"context"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// readConversionCRDs reads the CRDs whose conversion webhook the NamespaceDeletionContentFailure
// of a namespace being deleted quotes as failing, each by name: a CRD's name is always
// PLURAL.GROUP (the apiextensions-apiserver's validation requires it), and discovery has the
// plural of the quoted kind. A kind discovery does not have costs one list of every CRD; no
// such condition, no read.
func (col *collector) readConversionCRDs(ctx context.Context) error {
	wanted := conversionKinds(col.snap.Namespaces)
	if len(wanted) == 0 {
		return nil
	}
	var (
		out     []*unstructured.Unstructured
		errs    []error
		unknown = map[schema.GroupKind]bool{}
	)
	for _, gk := range wanted {
		name, ok := col.crdName(gk)
		if !ok {
			unknown[gk] = true
			continue
		}
		crd, err := get(ctx, col, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return col.c.Dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		})
		switch {
		case apierrors.IsNotFound(err): // deleted since: nothing is converted any more
		case err != nil:
			errs = append(errs, readErr("get", resourceName(crdResource)+" "+name, err))
		default:
			out = append(out, crd)
		}
	}
	if len(unknown) > 0 {
		all, err := col.listUnstructured(ctx, crdResource, "")
		errs = append(errs, err)
		for _, crd := range all {
			if unknown[crdGroupKind(crd)] {
				out = append(out, crd)
			}
		}
	}
	dropManagedFields(out)
	col.add(func(s *snapshot.Snapshot) { s.Admission.ConversionCRDs = out })
	return fault.Join(errs...)
}

// conversionKinds are the group/kinds whose conversion a namespace being deleted failed on.
func conversionKinds(namespaces []*corev1.Namespace) []schema.GroupKind {
	seen := map[schema.GroupKind]bool{}
	var out []schema.GroupKind
	for _, ns := range namespaces {
		if ns.DeletionTimestamp == nil {
			continue
		}
		for _, c := range ns.Status.Conditions {
			if c.Type != corev1.NamespaceDeletionContentFailure || c.Status != corev1.ConditionTrue {
				continue
			}
			for _, f := range admission.ConversionFailures(c.Message) {
				if gk := (schema.GroupKind{Group: f.Group, Kind: f.Kind}); !seen[gk] {
					seen[gk] = true
					out = append(out, gk)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// crdName is the name of the CRD that serves kind in group, from discovery.
func (col *collector) crdName(gk schema.GroupKind) (string, bool) {
	for _, r := range col.resources {
		if r.gvr.Group == gk.Group && r.kind == gk.Kind {
			return r.gvr.Resource + "." + gk.Group, true
		}
	}
	return "", false
}

func crdGroupKind(crd *unstructured.Unstructured) schema.GroupKind {
	g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	k, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	return schema.GroupKind{Group: g, Kind: k}
}

// backendServices are the Services the apiserver calls that the checks judge, each once,
// sorted: every webhook's, the conversion webhooks' of the CRDs read, and those of the
// APIServices that are not Available or that a namespace's discovery failure names.
func backendServices(s *snapshot.Snapshot) []serviceRef {
	seen := map[serviceRef]bool{}
	add := func(ref *admissionregistrationv1.ServiceReference) {
		if ref != nil {
			seen[serviceRef{ref.Namespace, ref.Name}] = true
		}
	}
	for _, c := range s.Admission.ValidatingWebhooks {
		for _, w := range c.Webhooks {
			add(w.ClientConfig.Service)
		}
	}
	for _, c := range s.Admission.MutatingWebhooks {
		for _, w := range c.Webhooks {
			add(w.ClientConfig.Service)
		}
	}
	for _, crd := range s.Admission.ConversionCRDs {
		add(nestedService(crd, "spec", "conversion", "webhook", "clientConfig", "service"))
	}
	discovery := discoveryFailures(s.Namespaces)
	for _, a := range s.APIServices {
		ref := nestedService(a, "spec", "service")
		if ref == nil {
			continue
		}
		group, _, _ := unstructured.NestedString(a.Object, "spec", "group")
		version, _, _ := unstructured.NestedString(a.Object, "spec", "version")
		if !apiServiceAvailable(a) || admission.NamesGroupVersion(discovery, group+"/"+version) {
			add(ref)
		}
	}
	out := make([]serviceRef, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].namespace != out[j].namespace {
			return out[i].namespace < out[j].namespace
		}
		return out[i].name < out[j].name
	})
	return out
}

func nestedService(u *unstructured.Unstructured, fields ...string) *admissionregistrationv1.ServiceReference {
	ns, _, _ := unstructured.NestedString(u.Object, append(fields, "namespace")...)
	name, _, _ := unstructured.NestedString(u.Object, append(fields, "name")...)
	if name == "" {
		return nil
	}
	return &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name}
}

// discoveryFailures joins the NamespaceDeletionDiscoveryFailure messages of namespaces being deleted.
func discoveryFailures(namespaces []*corev1.Namespace) string {
	var b strings.Builder
	for _, ns := range namespaces {
		for _, c := range ns.Status.Conditions {
			if ns.DeletionTimestamp != nil && c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				b.WriteString(c.Message + "\n")
			}
		}
	}
	return b.String()
}

func apiServiceAvailable(a *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Available" {
			return m["status"] == string(metav1.ConditionTrue)
		}
	}
	return false
}

// conversionQuote is the failed conversion an error quotes, from "conversion webhook for" on.
func conversionQuote(err error) string {
	if fs := admission.ConversionFailures(err.Error()); len(fs) > 0 {
		return fs[0].Message
	}
	return err.Error()
}
