package collect

import (
	"context"

	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Resources of the admission input, read whole (the objects input takes their deleted ones
// from here).
var (
	validatingWebhooks = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
	mutatingWebhooks   = admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations")
	admissionPolicies  = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	policyBindings     = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings")
)

// readAdmission lists the webhook configurations and the ValidatingAdmissionPolicies with their
// bindings, whole and whatever the scope: they are few, cluster-scoped, and act on every
// namespace. Policies are GA from v1.30; an apiserver that does not serve them is recorded as
// such, not as a failure.
func (col *collector) readAdmission(ctx context.Context) error {
	adm := col.c.Kube.AdmissionregistrationV1()
	var errs []error
	vwcs, err := listAll(ctx, col, resourceName(validatingWebhooks), adm.ValidatingWebhookConfigurations().List,
		func(l *admissionregistrationv1.ValidatingWebhookConfigurationList) []admissionregistrationv1.ValidatingWebhookConfiguration {
			return l.Items
		})
	errs = append(errs, err)
	mwcs, err := listAll(ctx, col, resourceName(mutatingWebhooks), adm.MutatingWebhookConfigurations().List,
		func(l *admissionregistrationv1.MutatingWebhookConfigurationList) []admissionregistrationv1.MutatingWebhookConfiguration {
			return l.Items
		})
	errs = append(errs, err)
	var (
		policies []*admissionregistrationv1.ValidatingAdmissionPolicy
		bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
		served   = col.served(admissionPolicies)
	)
	// When discovery could not say, the list itself does: 404 is not served.
	if served || col.discoveryErr(admissionPolicies.Group) != nil {
		policies, err = listAll(ctx, col, resourceName(admissionPolicies), adm.ValidatingAdmissionPolicies().List,
			func(l *admissionregistrationv1.ValidatingAdmissionPolicyList) []admissionregistrationv1.ValidatingAdmissionPolicy {
				return l.Items
			})
		served = !apierrors.IsNotFound(err)
		if served {
			errs = append(errs, err)
			bindings, err = listAll(ctx, col, resourceName(policyBindings), adm.ValidatingAdmissionPolicyBindings().List,
				func(l *admissionregistrationv1.ValidatingAdmissionPolicyBindingList) []admissionregistrationv1.ValidatingAdmissionPolicyBinding {
					return l.Items
				})
			errs = append(errs, err)
		}
	}
	dropManagedFields(vwcs)
	dropManagedFields(mwcs)
	dropManagedFields(policies)
	dropManagedFields(bindings)
	col.add(func(s *snapshot.Snapshot) {
		s.Admission.ValidatingWebhooks, s.Admission.MutatingWebhooks = vwcs, mwcs
		s.Admission.Policies, s.Admission.PolicyBindings, s.Admission.PoliciesServed = policies, bindings, served
	})
	err = fault.Join(errs...)
	// The objects input takes these resources' deleted objects from here, so what could not be
	// listed is missing there too, where it may hide a stuck object; here it only lacks evidence.
	if err != nil && col.want[snapshot.InputObjects] {
		col.unread(snapshot.InputObjects, err)
	}
	return err
}

// readBackends reads the CRDs a namespace being deleted fails to convert (conversion.go), then
// the Services the apiserver calls (backendServices), each by name, and each found Service's
// EndpointSlices by their kubernetes.io/service-name label in its namespace, a bounded number at
// a time: never a list of every Service or EndpointSlice. A Service that does not exist is
// recorded as such; other failures leave it out and are recorded once for the input.
func (col *collector) readBackends(ctx context.Context) {
	if err := col.readConversionCRDs(ctx); err != nil {
		col.unread(snapshot.InputAdmission, err)
	}
	refs := backendServices(col.snap)
	if len(refs) == 0 {
		return
	}
	// Each read fills its own slot, so the results need no lock and keep the order asked.
	read := make([]*snapshot.BackendService, len(refs))
	errs := make([]error, len(refs))
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for i, ref := range refs {
		g.Go(func() error {
			read[i], errs[i] = col.readBackend(ctx, ref)
			return nil // recorded below: a failed read never stops the others
		})
	}
	_ = g.Wait()
	col.add(func(s *snapshot.Snapshot) {
		s.Admission.Services = map[string]*snapshot.BackendService{}
		for _, b := range read {
			if b != nil {
				s.Admission.Services[b.Namespace+"/"+b.Name] = b
			}
		}
	})
	if err := fault.Join(errs...); err != nil {
		col.unread(snapshot.InputAdmission, err)
	}
}

// readBackend reads one Service and its EndpointSlices; nil when either read failed.
func (col *collector) readBackend(ctx context.Context, ref serviceRef) (*snapshot.BackendService, error) {
	out := &snapshot.BackendService{Namespace: ref.namespace, Name: ref.name}
	svc, err := get(ctx, col, func(ctx context.Context) (*corev1.Service, error) {
		return col.c.Kube.CoreV1().Services(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err):
		return out, nil
	case err != nil:
		return nil, readErr("get", "services "+ref.namespace+"/"+ref.name, err)
	}
	svc.ManagedFields = nil
	out.Service = svc
	list := col.c.Kube.DiscoveryV1().EndpointSlices(ref.namespace).List
	slices, err := listAll(ctx, col, "discovery.k8s.io/endpointslices of service "+ref.namespace+"/"+ref.name,
		func(ctx context.Context, o metav1.ListOptions) (*discoveryv1.EndpointSliceList, error) {
			o.LabelSelector = discoveryv1.LabelServiceName + "=" + ref.name
			return list(ctx, o)
		}, func(l *discoveryv1.EndpointSliceList) []discoveryv1.EndpointSlice { return l.Items })
	if err != nil {
		return nil, err
	}
	dropManagedFields(slices)
	out.EndpointSlices = slices
	return out, nil
}

// serviceRef names a Service.
type serviceRef struct{ namespace, name string }

// dropManagedFields drops what no check reads and can outweigh the rest of an object.
func dropManagedFields[T metav1.Object](objs []T) {
	for _, o := range objs {
		o.SetManagedFields(nil)
	}
}

// admissionResources are the resources the admission input reads whole.
func admissionResources() []schema.GroupVersionResource {
	return []schema.GroupVersionResource{validatingWebhooks, mutatingWebhooks, admissionPolicies, policyBindings}
}
