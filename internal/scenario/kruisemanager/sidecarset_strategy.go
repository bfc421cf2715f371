package kruisemanager

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// nextUpgradePods is GetNextUpgradePods (sidecarset_strategy.go, v1.9.0): of the matched pods
// not on the current hash and chosen by updateStrategy.selector, those that may change in place
// and are not mid-update wait; they are ordered as ActivePods orders them (unassigned, pending,
// not ready and newer pods first), the partition keeps the last of them back, and maxUnavailable
// (default 1, rounded up) bounds how many Ready pods are updated beside the updated pods not yet
// consistent and Ready. Pods that cannot change in place are returned apart.
func (s *sidecarSet) nextUpgradePods(pods []*corev1.Pod) (upgrade, notUpgradable []*corev1.Pod) {
	selected := func(*corev1.Pod) bool { return true }
	if st := s.Spec.UpdateStrategy.Selector; st != nil {
		sel, err := metav1.LabelSelectorAsSelector(st)
		selected = func(p *corev1.Pod) bool { return err == nil && sel.Matches(labels.Set(p.Labels)) }
	}
	var waiting []*corev1.Pod
	for _, pod := range pods {
		if s.podUpdated(pod) || !selected(pod) {
			continue
		}
		switch can, consistent := s.upgradable(pod); {
		case can && consistent:
			waiting = append(waiting, pod)
		case !can:
			notUpgradable = append(notUpgradable, pod)
		}
	}
	sort.SliceStable(waiting, func(i, j int) bool { return activeFirst(waiting[i], waiting[j]) })
	n := s.upgradeCount(waiting, pods)
	return waiting[:n], notUpgradable
}

// upgradeCount is calculateUpgradeCount: how many of the waiting pods this round updates.
func (s *sidecarSet) upgradeCount(waiting, pods []*corev1.Pod) int {
	total := len(pods)
	partition := 0
	if p := s.Spec.UpdateStrategy.Partition; p != nil {
		partition, _ = intstr.GetScaledValueFromIntOrPercent(p, total, true)
	}
	if len(waiting)-partition <= 0 {
		return 0
	}
	waiting = waiting[:len(waiting)-partition]
	maxUnavailable := 1
	if mu := s.Spec.UpdateStrategy.MaxUnavailable; mu != nil {
		maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(mu, total, true)
	}
	unavailable := 0
	for _, pod := range pods {
		if s.podUpdated(pod) && (!s.consistent(pod) || !runningReady(pod)) {
			unavailable++
		}
	}
	n := 0
	for _, pod := range waiting {
		// A pod not ready is no less available for being updated.
		if !runningReady(pod) {
			n++
			continue
		}
		if unavailable >= maxUnavailable {
			break
		}
		unavailable++
		n++
	}
	return n
}

// activeFirst is controller.ActivePods' order, reduced: unassigned before assigned, Pending
// before Running, not Ready before Ready, newer before older, then by name.
func activeFirst(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if (a.Status.Phase == corev1.PodRunning) != (b.Status.Phase == corev1.PodRunning) {
		return a.Status.Phase != corev1.PodRunning
	}
	if PodReady(a) != PodReady(b) {
		return !PodReady(a)
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name < b.Name
}
