package collect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readWorkloads reads the OpenKruise workloads in scope (CloneSets, Advanced StatefulSets and
// DaemonSets) at the versions the cluster serves. With a label selector only the workloads that
// match it are read, as the pods are.
func (col *collector) readWorkloads(ctx context.Context) error {
	if err := col.discoveryErr(GroupKruise); err != nil {
		return err
	}
	if !col.snap.Installed[GroupKruise] {
		return nil
	}
	var errs []string
	for _, gvr := range []schema.GroupVersionResource{kruise.CloneSets, kruise.StatefulSets, kruise.DaemonSets} {
		if !col.served(gvr) {
			continue
		}
		items, err := col.listSelected(ctx, gvr, col.namespace(), col.opts.Scope.LabelSelector)
		if err != nil {
			errs = append(errs, err.Error())
		}
		var ws []*kruise.Workload
		for _, u := range items {
			w, err := kruise.WorkloadFromUnstructured(u)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			ws = append(ws, w)
		}
		col.add(func(s *snapshot.Snapshot) { s.Workloads = append(s.Workloads, ws...) })
	}
	col.noteCutWorkloads()
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// readSidecarSets reads every SidecarSet. One that does not decode is left out and named in the
// input's error, as an undecodable workload is: a scan that could not judge it must not say so
// by silence.
func (col *collector) readSidecarSets(ctx context.Context) error {
	if err := col.discoveryErr(GroupKruise); err != nil {
		return err
	}
	if !col.served(kruise.SidecarSets) {
		return nil
	}
	items, err := col.listUnstructured(ctx, kruise.SidecarSets, "")
	errs := []error{err}
	var out []*kruise.SidecarSet
	for _, u := range items {
		ss, derr := kruise.SidecarSetFromUnstructured(u)
		if derr != nil {
			errs = append(errs, derr)
			continue
		}
		out = append(out, ss)
	}
	col.add(func(s *snapshot.Snapshot) { s.SidecarSets = out })
	return errors.Join(errs...)
}

// maxNamedCut bounds the workloads a coverage note names.
const maxNamedCut = 5

// noteCutWorkloads says, in coverage, which workloads the label selector may have cut pods of:
// their controllers' counts cannot be redone on the pods read, so no check judges them on those.
func (col *collector) noteCutWorkloads() {
	col.mu.Lock()
	defer col.mu.Unlock()
	cut := col.snap.PodsCut()
	if len(cut) == 0 {
		return
	}
	names := make([]string, 0, len(cut))
	for _, w := range cut {
		names = append(names, w.Kind+" "+w.Namespace+"/"+w.Name)
	}
	sort.Strings(names)
	col.snap.Limits[snapshot.InputKruiseWorkloads] = fmt.Sprintf("-l %s may leave out pods that %s select (their selectors do not fix the labels it tests): their replica counts are not judged",
		col.opts.Scope.LabelSelector, summarize(names, maxNamedCut))
}
