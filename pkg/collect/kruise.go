package collect

import (
	"context"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readWorkloads reads the OpenKruise workloads in scope (CloneSets, Advanced StatefulSets and
// DaemonSets) at the versions the cluster serves.
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
		items, err := col.listUnstructured(ctx, gvr, col.namespace())
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
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// readSidecarSets reads every SidecarSet; one that does not decode is left out.
func (col *collector) readSidecarSets(ctx context.Context) error {
	if err := col.discoveryErr(GroupKruise); err != nil {
		return err
	}
	if !col.served(kruise.SidecarSets) {
		return nil
	}
	items, err := col.listUnstructured(ctx, kruise.SidecarSets, "")
	var out []*kruise.SidecarSet
	for _, u := range items {
		if ss, derr := kruise.SidecarSetFromUnstructured(u); derr == nil {
			out = append(out, ss)
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.SidecarSets = out })
	return err
}
