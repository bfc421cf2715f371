package kruisemanager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The stand-in counts a pod ready as IsPodUpdateReady does (cloneset_core.go, v1.9.0): Running,
// Ready, and not in the middle of an in-place update.
func TestPodUpdateReady(t *testing.T) {
	pod := func(phase corev1.PodPhase, conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, Conditions: conds}}
	}
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	inPlace := func(s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: kruise.ConditionInPlaceReady, Status: s}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running, ready, in-place ready", pod(corev1.PodRunning, ready, inPlace(corev1.ConditionTrue)), true},
		{"running, ready, no in-place condition", pod(corev1.PodRunning, ready), true},
		{"in-place update not done", pod(corev1.PodRunning, ready, inPlace(corev1.ConditionFalse)), false},
		{"not Ready", pod(corev1.PodRunning, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}), false},
		{"Ready but not Running", pod(corev1.PodPending, ready), false},
	} {
		if got := podUpdateReady(tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
