package kruisemanager

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// update is the stand-in's realControl.Update for updateStrategy.type ReCreate
// (pkg/controller/cloneset/sync/cloneset_update.go, OpenKruise v1.9.0), reduced: once scaling has
// nothing to do, pods off the update revision beyond the partition are marked
// apps.kruise.io/specified-delete (updatePod's ReCreate path), at most as many as
// maxUnavailable (default 20%, rounded up without maxSurge) leaves room for beside the pods
// already unavailable (limitUpdateIndexes); the scale step then deletes them and creates their
// replacements from the update revision. The in-place types update the pods so chosen in place
// when the change can be made in place (images, labels and annotations, and with
// InPlaceWorkloadVerticalScaling cpu and memory: calculateInPlaceSpec), and never recreate. A
// paused CloneSet updates nothing.
func (p *leaderProcess) update(ctx context.Context, w *kruise.Workload, updateRevision string, active []*corev1.Pod, replicas int32) error {
	if w.Paused || (w.UpdateType != kruise.UpdateReCreate && !w.InPlace()) || int32(len(active)) != replicas {
		return nil
	}
	var old []*corev1.Pod
	unavailable := 0
	for _, pod := range active {
		// A pod waiting in PreparingUpdate is revisited: its hook may have been released.
		if w.InPlace() && pod.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingUpdate && pod.Labels["controller-revision-hash"] != updateRevision {
			unavailable++
			if err := p.updateInPlace(ctx, w, pod, updateRevision); err != nil {
				return err
			}
			continue
		}
		if _, chosen := pod.Labels[kruise.LabelSpecifiedDelete]; chosen || !podUpdateReady(pod) || pod.Labels[kruise.LabelLifecycleState] != kruise.StateNormal {
			unavailable++
			continue
		}
		if pod.Labels["controller-revision-hash"] != updateRevision {
			old = append(old, pod)
		}
	}
	partition := 0
	if w.Partition != nil {
		partition = int(*w.Partition)
	}
	maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(
		intstr.ValueOrDefault(w.Scaling.MaxUnavailable, intstr.FromString("20%")), int(replicas), true)
	if err != nil {
		return fmt.Errorf("maxUnavailable of %s/%s: %w", w.Namespace, w.Name, err)
	}
	n := min(len(old)-partition, maxUnavailable-unavailable)
	for _, pod := range old[:max(n, 0)] {
		if w.InPlace() {
			if err := p.updateInPlace(ctx, w, pod, updateRevision); err != nil {
				return err
			}
			// The stand-in recreates no pod of an in-place CloneSet (InPlaceIfPossible would).
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{kruise.LabelSpecifiedDelete: "true"}}})
		if _, err := p.m.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{FieldManager: managerFieldManager}); err != nil {
			return fmt.Errorf("patch pod %s specified-delete for update: %w", pod.Name, err)
		}
		p.event(ctx, w, corev1.EventTypeNormal, "SuccessfulUpdatePodReCreate",
			fmt.Sprintf("successfully patch pod %s specified-delete for update(revision %s)", pod.Name, updateRevision))
	}
	return nil
}

// Progressing condition reasons (apps/v1alpha1 cloneset_types.go, v1.9.0).
const (
	ReasonAvailable          = "CloneSetAvailable"
	ReasonPaused             = "CloneSetPaused"
	ReasonPartitionAvailable = "ProgressPartitionAvailable"
	ReasonDeadlineExceeded   = "ProgressDeadlineExceeded"
	ReasonUpdated            = "CloneSetUpdated"
)

// progressCounts are the status counts calculateProgressingStatus reads.
type progressCounts struct {
	replicas, updated, updatedAvailable, expectedUpdated int64
	currentRevision, updateRevision                      string
}

// progressing is calculateProgressingStatus (pkg/controller/cloneset/cloneset_status.go, v1.9.0):
// without spec.progressDeadlineSeconds the condition is removed; otherwise Available, Paused,
// PartitionAvailable or, once the deadline passed since the condition's lastUpdateTime (or it
// already said so), ProgressDeadlineExceeded, else CloneSetUpdated. A condition whose status and
// reason do not change is kept as it was (SetCloneSetCondition), lastUpdateTime included. It
// returns the conditions and, while progressing, when to look again.
func progressing(w *kruise.Workload, deadline *int32, conds any, c progressCounts, now time.Time) ([]any, time.Duration) {
	list, _ := conds.([]any)
	var out []any
	var cur map[string]any
	for _, x := range list {
		if m, ok := x.(map[string]any); ok && m["type"] == "Progressing" {
			cur = m
			continue
		}
		out = append(out, x)
	}
	if deadline == nil {
		return out, -1
	}
	wait := time.Duration(*deadline) * time.Second
	status, reason, msg, requeue := "True", ReasonUpdated, "CloneSet is progressing", time.Duration(-1)
	lastUpdate := func() time.Time {
		t, _ := time.Parse(time.RFC3339, fmt.Sprint(cur["lastUpdateTime"]))
		return t
	}
	switch {
	case c.currentRevision == c.updateRevision && c.replicas == c.expectedReplicas(w) && c.updated == c.replicas && c.updatedAvailable == c.replicas:
		reason, msg = ReasonAvailable, "CloneSet is available"
	case w.Paused:
		reason, msg = ReasonPaused, "CloneSet is paused"
	case c.expectedUpdated < c.expectedReplicas(w) && c.expectedUpdated <= c.updatedAvailable:
		reason, msg = ReasonPartitionAvailable, "CloneSet has been paused due to partition ready"
	case cur != nil && (cur["reason"] == ReasonDeadlineExceeded || lastUpdate().Add(wait).Before(now)):
		status, reason, msg = "False", ReasonDeadlineExceeded, fmt.Sprintf("CloneSet revision %s has timed out progressing", c.updateRevision)
	default:
		requeue = time.Second
		if cur != nil && cur["reason"] == ReasonUpdated {
			requeue = max(lastUpdate().Add(wait).Sub(now), 0) + time.Second
		} else {
			requeue = wait + time.Second
		}
	}
	stamp := now.UTC().Format(time.RFC3339)
	next := map[string]any{"type": "Progressing", "status": status, "reason": reason, "message": msg,
		"lastUpdateTime": stamp, "lastTransitionTime": stamp}
	switch {
	case cur != nil && cur["status"] == status && cur["reason"] == reason:
		next = cur
	case cur != nil && cur["status"] == status:
		next["lastTransitionTime"] = cur["lastTransitionTime"]
	}
	return append(out, next), requeue
}

func (c progressCounts) expectedReplicas(w *kruise.Workload) int64 {
	if w.Replicas == nil {
		return 1
	}
	return int64(*w.Replicas)
}
