package terminating

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/admission"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// failingConversion is a CRD's conversion webhook that a namespace's deletion failed on.
type failingConversion struct {
	failure admission.ConversionFailure
	// crd is nil when it was not read; name is then unknown.
	crd     *unstructured.Unstructured
	backend admission.Backend
}

// resourceType names the resource type whose objects cannot be converted.
func (f failingConversion) resourceType() string {
	stored := fmt.Sprintf("stored at %s/%s", f.failure.Group, f.failure.Version)
	if f.crd == nil {
		return fmt.Sprintf("Kind %s of %s (%s)", f.failure.Kind, f.failure.Group, stored)
	}
	return fmt.Sprintf("%s (Kind %s, %s)", f.crd.GetName(), f.failure.Kind, stored)
}

func (f failingConversion) name() string {
	if f.crd == nil {
		return fmt.Sprintf("the CustomResourceDefinition of %s, Kind=%s", f.failure.Group, f.failure.Kind)
	}
	return "CustomResourceDefinition " + f.crd.GetName()
}

// namespaceConversion: the namespace controller deletes every resource through the version
// discovery prefers (deleteAllContent in pkg/controller/namespace/deletion/
// namespaced_resources_deleter.go, kubernetes v1.37.1), so the objects of a CRD stored at another
// version are converted by its webhook on that DELETECOLLECTION and LIST. When the webhook cannot
// answer, deleteAllContentForGroupVersionResource returns the apiextensions-apiserver's
// `conversion webhook for GROUP/VERSION, Kind=KIND failed` and makeDeleteContentCondition quotes
// it in NamespaceDeletionContentFailure. Those objects cannot be read at all, so they have no
// finding of their own: the CRD is the root. Emptying the namespace's spec.finalizers would leave
// them in etcd, so there is no fix.
func (a *pass) namespaceConversion(t *target) (checks.Draft, bool) {
	c := namespaceCondition(t.ns, corev1.NamespaceDeletionContentFailure)
	if c == nil {
		return checks.Draft{}, false
	}
	failures := admission.ConversionFailures(c.Message)
	var quotes []string
	for _, f := range failures {
		quotes = append(quotes, f.Message)
	}
	var failing []failingConversion
	seen := map[schema.GroupKind]bool{}
	for _, f := range failures {
		gk := schema.GroupKind{Group: f.Group, Kind: f.Kind}
		if seen[gk] {
			continue
		}
		seen[gk] = true
		crd := a.s.ConversionCRD(f.Group, f.Kind)
		if crd == nil {
			// Not read: the quote is all there is, and it proves the call failed.
			failing = append(failing, failingConversion{failure: f, backend: admission.Backend{State: admission.Unavailable, Reason: f.Reason(),
				Evidence: []string{fmt.Sprintf("the CustomResourceDefinition of %s, Kind=%s was not read", f.Group, f.Kind)}}})
			continue
		}
		// A CRD whose webhook was removed since, or answers again, lets the next pass through.
		if b := admission.ConversionBackend(crd, a.s, quotes); b.State == admission.Unavailable {
			failing = append(failing, failingConversion{failure: f, crd: crd, backend: b})
		}
	}
	if len(failing) == 0 {
		return checks.Draft{}, false
	}
	ev := []string{a.conditionLine(c)}
	var types []string
	for _, f := range failing {
		types = append(types, f.resourceType())
	}
	ev = append(ev, "resource types the namespace controller cannot read or delete: "+strings.Join(types, "; "))
	var blocked []report.BlockRef
	for _, f := range failing {
		ev = append(ev, f.backend.Evidence...)
		held := a.namespacesHeldBy(f.failure)
		ev = append(ev, checks.Evidencef("%d Terminating namespace(s) in scope held behind this conversion webhook: %s", len(held), strings.Join(firstN(held, 5), ", ")))
		if f.crd != nil {
			blocked = append(blocked, report.BlockRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: f.crd.GetName()})
		}
	}
	for _, other := range []corev1.NamespaceConditionType{corev1.NamespaceDeletionDiscoveryFailure, corev1.NamespaceContentRemaining, corev1.NamespaceFinalizersRemaining} {
		if oc := namespaceCondition(t.ns, other); oc != nil {
			ev = append(ev, a.conditionLine(oc))
		}
	}
	first := failing[0]
	return checks.Draft{
		RootCause: RootCauseConversionWebhookUnavailable,
		Summary: fmt.Sprintf("Terminating for %s: the conversion webhook of %s fails (%s)", checks.Age(a.now, t.ns.DeletionTimestamp.Time),
			first.name(), first.backend.Reason),
		Message: fmt.Sprintf("The namespace controller deletes each resource through the version discovery prefers, and the objects of "+
			"%s are stored at another version, so every read and deletion of them calls the conversion webhook of %s, which cannot "+
			"answer: %s. Until it does, those objects cannot even be read: they can be neither deleted nor diagnosed one by one, and "+
			"the namespace keeps its kubernetes finalizer. Emptying the namespace's spec.finalizers would leave them behind in etcd. "+
			"Restore the conversion webhook (its Service and the pods behind it); if what served it is gone for good, whoever owns "+
			"that API decides between removing the CRD's conversion webhook and deleting the CRD with its objects.",
			first.resourceType(), first.name(), first.backend.Reason),
		Evidence:  ev,
		BlockedBy: blocked,
	}, true
}

// namespacesHeldBy are the namespaces being deleted whose content failure quotes a failed
// conversion of the same group and kind, by name: how far the webhook's outage reaches.
func (a *pass) namespacesHeldBy(f admission.ConversionFailure) []string {
	var out []string
	for _, ns := range a.s.Namespaces {
		c := namespaceCondition(ns, corev1.NamespaceDeletionContentFailure)
		if ns.DeletionTimestamp == nil || c == nil {
			continue
		}
		for _, g := range admission.ConversionFailures(c.Message) {
			if g.Group == f.Group && g.Kind == f.Kind {
				out = append(out, ns.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
