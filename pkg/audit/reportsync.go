package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ReportWriter keeps the cluster's policy reports equal to the last good scan: it applies one
// report per namespace with findings (and the cluster-scoped one) with server-side apply under
// FieldManager, and deletes the auditor's reports whose findings are gone.
type ReportWriter struct {
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	// mode is --reports: auto, openreports, policyreport or none.
	mode string
	// namespace limits the deletes to the scanned namespace ("" scans all of them).
	namespace string
	log       *slog.Logger
	// chosen is the API picked last time, "" for none; the log says when it changes.
	chosen *string
}

// ReportModes are the values of --reports.
var ReportModes = []string{reportsAutoMode, OpenReports.Name, PolicyReports.Name, "none"}

// NewReportWriter returns the writer for --reports mode; namespace is the scan's ("" for -A).
func NewReportWriter(dyn dynamic.Interface, disc discovery.DiscoveryInterface, mode, namespace string, log *slog.Logger) (*ReportWriter, error) {
	ok := false
	for _, m := range ReportModes {
		ok = ok || m == mode
	}
	if !ok {
		return nil, fmt.Errorf("unknown report mode %q", mode)
	}
	return &ReportWriter{dyn: dyn, disc: disc, mode: mode, namespace: namespace, log: log}, nil
}

// api returns the report API to write, or nil for none.
func (w *ReportWriter) api() (*ReportAPI, error) {
	var want []ReportAPI
	switch w.mode {
	case "none":
		return nil, nil
	case reportsAutoMode:
		want = ReportAPIs
	default:
		for _, a := range ReportAPIs {
			if a.Name == w.mode {
				want = []ReportAPI{a}
			}
		}
	}
	for _, a := range want {
		served, err := w.served(a)
		if err != nil {
			return nil, err
		}
		if served {
			w.note(a.GroupVersion.String())
			return &a, nil
		}
	}
	w.note("")
	return nil, nil
}

// served asks discovery whether the cluster serves both of the API's report resources.
func (w *ReportWriter) served(a ReportAPI) (bool, error) {
	list, err := w.disc.ServerResourcesForGroupVersion(a.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", a.GroupVersion, err)
	}
	n := 0
	for _, r := range list.APIResources {
		if r.Name == a.Resource || r.Name == a.ClusterRes {
			n++
		}
	}
	return n == 2, nil
}

// note logs the report API once, and again when it changes.
func (w *ReportWriter) note(gv string) {
	if w.chosen != nil && *w.chosen == gv {
		return
	}
	w.chosen = &gv
	if gv == "" {
		w.log.Warn("no policy report API served; reports are not written", slog.String("reports", w.mode))
		return
	}
	w.log.Info("writing policy reports", slog.String("api", gv))
}

// Sync makes the reports match r, which must come from a cycle that looked (never a failed one:
// its silence would delete reports). When r's coverage is incomplete the reports say what was not
// covered and keep what may merely be unread (planReports). It returns how many reports it
// applied and deleted.
func (w *ReportWriter) Sync(ctx context.Context, r *report.Report) (applied, deleted int, err error) {
	api, err := w.api()
	if err != nil || api == nil {
		return 0, 0, err
	}
	// The auditor's reports as they are: what a scan that could not cover everything carries
	// over, and what the prune compares with.
	existing, err := w.list(ctx, *api)
	if err != nil && len(gapsOf(r.Coverage)) > 0 {
		// Without them the carried-over results would be lost: write nothing this cycle.
		return 0, 0, err
	}
	listErr := err
	want := planReports(r, *api, existing, w.namespace)
	if w.namespace != "" {
		foldClusterReport(*api, want, w.namespace)
	}
	var errs []error
	for _, ns := range slices.Sorted(maps.Keys(want)) {
		err := w.apply(ctx, *api, want[ns])
		switch {
		case err == nil:
			applied++
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// A namespace being deleted takes no new report; its stuck content is what this
			// tool reports most, so the other namespaces must not wait on it.
		default:
			errs = append(errs, err)
		}
	}
	if listErr != nil {
		return applied, 0, errors.Join(append(errs, listErr)...)
	}
	deleted, err = w.prune(ctx, *api, existing, want)
	return applied, deleted, errors.Join(append(errs, err)...)
}

func (w *ReportWriter) apply(ctx context.Context, api ReportAPI, obj interface{ GetNamespace() string }) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	ns := obj.GetNamespace()
	force := true
	var res dynamic.ResourceInterface = w.dyn.Resource(api.GVR(ns == ""))
	if ns != "" {
		res = w.dyn.Resource(api.GVR(false)).Namespace(ns)
	}
	// Force: the auditor owns these reports' results and summary; another manager's fields
	// elsewhere (labels, annotations) are left alone by apply.
	if _, err := res.Patch(ctx, ReportName, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", api.GVR(ns == "").Resource, ns, ReportName, err)
	}
	return nil
}

// list returns the auditor's reports (its name and label) in the scanned scope.
func (w *ReportWriter) list(ctx context.Context, api ReportAPI) ([]unstructured.Unstructured, error) {
	sel := metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedByValue, FieldSelector: "metadata.name=" + ReportName}
	scopes := []dynamic.ResourceInterface{w.dyn.Resource(api.GVR(false)).Namespace(w.namespace)}
	if w.namespace == "" {
		scopes = append(scopes, w.dyn.Resource(api.GVR(true)))
	}
	var out []unstructured.Unstructured
	for _, res := range scopes {
		list, err := res.List(ctx, sel)
		if err != nil {
			return nil, fmt.Errorf("list reports: %w", err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// prune deletes the existing reports that want lacks.
func (w *ReportWriter) prune(ctx context.Context, api ReportAPI, existing []unstructured.Unstructured, want map[string]*unstructured.Unstructured) (int, error) {
	var errs []error
	deleted := 0
	for _, item := range existing {
		if _, ok := want[item.GetNamespace()]; ok {
			continue
		}
		var target dynamic.ResourceInterface = w.dyn.Resource(api.GVR(true))
		if item.GetNamespace() != "" {
			target = w.dyn.Resource(api.GVR(false)).Namespace(item.GetNamespace())
		}
		uid := item.GetUID()
		err := target.Delete(ctx, item.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete report %s/%s: %w", item.GetNamespace(), item.GetName(), err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}

// foldClusterReport moves the results of cluster-scoped objects (with -n, the namespace itself)
// into the namespace's report: an auditor scoped to one namespace writes no cluster-scoped
// report, which it could neither list nor prune (docs/contract.md, "Auditor").
func foldClusterReport(api ReportAPI, want map[string]*unstructured.Unstructured, ns string) {
	cr := want[""]
	if cr == nil {
		return
	}
	delete(want, "")
	if want[ns] == nil {
		want[ns] = buildReport(api, ns, nil, time.Time{})
	}
	res := resultsOf(want[ns])
	for _, r := range resultsOf(cr) {
		if m, ok := r.(map[string]any); ok && !isGap(m) {
			res = append(res, r)
		}
	}
	setResults(want[ns], res)
}
