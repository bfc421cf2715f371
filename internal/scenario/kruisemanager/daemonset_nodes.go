package kruisemanager

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Where an Advanced DaemonSet's pods run (daemonset_util.go and kruise's daemonset utils, v1.9.0).

// daemonTolerations are what every daemon pod tolerates (AddOrUpdateDaemonPodTolerations).
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// daemonShouldRun is nodeShouldRunDaemonPod: whether a pod should run on the node, and whether
// one that runs there may keep running (it tolerates the node's NoExecute taints).
func daemonShouldRun(node *corev1.Node, tpl *corev1.PodTemplateSpec) (bool, bool) {
	if tpl.Spec.NodeName != "" && tpl.Spec.NodeName != node.Name {
		return false, false
	}
	if !labels.SelectorFromSet(tpl.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false, false
	}
	tolerations := append(append([]corev1.Toleration{}, tpl.Spec.Tolerations...), daemonTolerations...)
	fits, keep := true, true
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule || tolerated(tolerations, t) {
			continue
		}
		fits = false
		if t.Effect == corev1.TaintEffectNoExecute {
			keep = false
		}
	}
	return fits, fits || keep
}

// tolerated is ToleratesTaint for the operators Exists and Equal.
func tolerated(tolerations []corev1.Toleration, t *corev1.Taint) bool {
	for _, tol := range tolerations {
		if (tol.Effect == "" || tol.Effect == t.Effect) && (tol.Key == "" || tol.Key == t.Key) &&
			(tol.Operator == corev1.TolerationOpExists || tol.Value == t.Value) {
			return true
		}
	}
	return false
}

// nodeNameAffinity is ReplaceDaemonSetPodNodeNameNodeAffinity: the scheduler may place the pod
// on that node only.
func nodeNameAffinity(a *corev1.Affinity, node string) *corev1.Affinity {
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}
	return a
}

// targetNode is the node a daemon pod runs on or is meant for (GetTargetNodeName).
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

// scheduledFirst is podByCreationTimestampAndPhase: scheduled pods first, then the oldest.
func scheduledFirst(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
		return a.Spec.NodeName != ""
	}
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}
