package collect

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readEvents keeps only the events checks use: Warnings, and any event about an OpenKruise
// object (its SuccessfulCreate/SuccessfulDelete show the controller is alive). The apiserver
// filters them (field selectors on type and involvedObject.apiVersion), so the Normal events that
// make up most of a busy cluster's events are never sent; a server that rejects the selectors gets
// one unfiltered list, filtered here.
func (col *collector) readEvents(ctx context.Context) error {
	var events []*corev1.Event
	list := func(ns, sel string) error {
		mark := len(events)
		return col.paginate(ctx, metav1.ListOptions{FieldSelector: sel}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
			l, err := col.c.Kube.CoreV1().Events(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				e := l.Items[i]
				if !col.keepEvent(ns, e.InvolvedObject.Namespace) {
					continue
				}
				if e.Type == corev1.EventTypeWarning || strings.HasPrefix(e.InvolvedObject.APIVersion, kruise.Group+"/") {
					// A copy, so the page's other events are not kept alive; no check reads who wrote an event.
					e.ManagedFields = nil
					events = append(events, &e)
				}
			}
			return l.Continue, nil
		}, func() { events = events[:mark] })
	}
	selectors := []string{"type=" + corev1.EventTypeWarning}
	if col.snap.Installed[GroupKruise] {
		for _, gv := range col.groupVersions(GroupKruise, "v1alpha1", "v1beta1") {
			selectors = append(selectors, "type!="+corev1.EventTypeWarning+",involvedObject.apiVersion="+gv)
		}
	}
	var err error
	for _, ns := range col.eventNamespaces() {
		start := len(events)
		for _, sel := range selectors {
			if err = list(ns, sel); apierrors.IsBadRequest(err) {
				events = events[:start]
				err = list(ns, "")
				break
			}
			if err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.Events = events })
	if err != nil {
		return readErr("list", "events", err)
	}
	return nil
}
