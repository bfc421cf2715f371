package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/why"
)

// runBundle is why --from-bundle: the bundle's whole captured scan is replayed (a replay
// answers only the requests the capture made, and why's own narrower reads are not among
// them), and the tree is built for the object from that report, as scan --from-bundle reports
// it. The type resolves over the replayed discovery; the object is read from what the capture
// recorded. A foreign capture has no plan: why reads it as it would read a cluster.
func (o *WhyOptions) runBundle(cmd *cobra.Command, args []string) error {
	fail := func(err error) error { return &ExitError{Code: ExitFailure, Err: err} }
	if err := refuseConnectionFlags(cmd); err != nil {
		return fail(err)
	}
	if o.Watch {
		return fail(errors.New("--watch cannot be used with --from-bundle: a bundle does not change"))
	}
	if err := o.reportFlags.validate(why.Formats); err != nil {
		return fail(err)
	}
	typ, name, err := why.ParseArgs(args)
	if err != nil {
		return fail(err)
	}
	b, err := openBundle(o.FromBundle, o.ErrOut)
	if err != nil {
		return fail(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
		}
	}()
	// -n is the object's namespace here, not a scope: the scope is the plan's.
	ns := namespaceFlag(o.config)
	opts, err := offlineOptions(cmd, "", &o.scanFlags, o.reg, b)
	if err != nil {
		return fail(err)
	}
	if opts.Exemptions, err = o.exemptionFlags.policy(o.reg); err != nil {
		return fail(err)
	}
	clients, err := scan.JSONClients(&rest.Config{Host: bundle.Address(), Transport: b.Source.Transport})
	if err != nil {
		return fail(err)
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(clients.Discovery)), clients.Discovery, nil)
	if b.Manifest == nil {
		if ns == "" {
			ns = "default"
		}
		target, err := why.Resolve(mapper, typ, name, ns)
		if err != nil {
			return fail(err)
		}
		atCapture(&opts, b)
		res, err := why.Run(cmd.Context(), clients, target, opts)
		if err != nil {
			return fail(err)
		}
		if res.Report != nil {
			stampBundle(res.Report, b)
		}
		return o.print(res)
	}
	plan := b.Manifest.Plan
	switch {
	case ns == "" && !plan.AllNamespaces:
		ns = plan.Namespace
	case ns == "":
		ns = "default"
	case !plan.AllNamespaces && ns != plan.Namespace:
		return fail(fmt.Errorf("namespace %s is not in the bundle, which holds %s", ns, planScope(plan)))
	}
	target, err := why.Resolve(mapper, typ, name, ns)
	if err != nil {
		return fail(err)
	}
	objNS := ""
	if target.Namespaced {
		objNS = target.Namespace
	}
	u, ok := b.Object(target.Resource.GroupVersion().String(), target.Kind, target.Resource.Resource, objNS, target.Name)
	if !ok {
		return fail(fmt.Errorf("%s %w in the bundle (the capture did not read it)", target, why.ErrNotFound))
	}
	r, snap, err := scanBundle(cmd.Context(), b, opts)
	if err != nil {
		return fail(err)
	}
	res, err := why.FromScan(r, snap, target, u, ns)
	if err != nil {
		return fail(err)
	}
	return o.print(res)
}
