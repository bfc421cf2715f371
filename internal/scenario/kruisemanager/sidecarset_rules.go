package kruisemanager

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The SidecarSet controller's rules, from OpenKruise v1.9.0 pkg/controller/sidecarset
// (sidecarset_processor.go, sidecarset_strategy.go) and pkg/control/sidecarcontrol (hash.go,
// util.go, sidecarset_control.go), reduced to what the stand-in plays: no hot upgrade, no
// namespaceSelector, priority or scatter strategy, no ControllerRevisions.

// Pod and SidecarSet annotations and the pod condition the controller writes.
const (
	annotationSidecarHashNoImage = "kruise.io/sidecarset-hash-without-image"
	annotationSidecarUpdateState = "kruise.io/sidecarset-inplace-update-state"
	conditionSidecarUpgradable   = "SidecarSetUpgradable"
	sidecarNotUpdate             = "NotUpdate"
)

// sidecarSet is the part of a SidecarSet the controller reads.
type sidecarSet struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector       *metav1.LabelSelector `json:"selector"`
		Namespace      string                `json:"namespace"`
		Containers     []corev1.Container    `json:"containers"`
		UpdateStrategy struct {
			Type           string                `json:"type"`
			Paused         bool                  `json:"paused"`
			Partition      *intstr.IntOrString   `json:"partition"`
			MaxUnavailable *intstr.IntOrString   `json:"maxUnavailable"`
			Selector       *metav1.LabelSelector `json:"selector"`
		} `json:"updateStrategy"`
	} `json:"spec"`
	Status sidecarSetStatus `json:"status"`
}

// sidecarSetStatus is what calculateStatus computes.
type sidecarSetStatus struct {
	ObservedGeneration int64  `json:"observedGeneration"`
	MatchedPods        int32  `json:"matchedPods"`
	UpdatedPods        int32  `json:"updatedPods"`
	ReadyPods          int32  `json:"readyPods"`
	UpdatedReadyPods   int32  `json:"updatedReadyPods"`
	LatestRevision     string `json:"latestRevision,omitempty"`
}

func decodeSidecarSet(u *unstructured.Unstructured) (*sidecarSet, error) {
	var ss sidecarSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ss); err != nil {
		return nil, fmt.Errorf("decode SidecarSet %s: %w", u.GetName(), err)
	}
	return &ss, nil
}

// revision is the SidecarSet's current hash (GetSidecarSetRevision): the annotation the
// SidecarSet webhook writes.
func (s *sidecarSet) revision() string { return s.Annotations[kruise.AnnotationSidecarHash] }

// sidecarHashes are SidecarSetHash and SidecarSetHashWithoutImage: sha256 of the containers'
// JSON, with and without images, safe-encoded.
func sidecarHashes(containers []corev1.Container) (hash, withoutImage string, err error) {
	sum := func(cs []corev1.Container) (string, error) {
		raw, err := json.Marshal(map[string]any{"containers": cs})
		if err != nil {
			return "", fmt.Errorf("hash sidecar containers: %w", err)
		}
		return utilrand.SafeEncodeString(fmt.Sprintf("%x", sha256.Sum256(raw))), nil
	}
	if hash, err = sum(containers); err != nil {
		return "", "", err
	}
	noImage := make([]corev1.Container, len(containers))
	for i, c := range containers {
		c.Image = ""
		noImage[i] = c
	}
	withoutImage, err = sum(noImage)
	return hash, withoutImage, err
}

// podSidecarRevision is one SidecarSet's entry in a pod's kruise.io/sidecarset-hash (and
// -without-image) annotation (SidecarSetUpgradeSpec).
type podSidecarRevision struct {
	UpdateTimestamp    metav1.Time `json:"updateTimestamp"`
	Hash               string      `json:"hash"`
	SidecarSetName     string      `json:"sidecarSetName"`
	SidecarList        []string    `json:"sidecarList"`
	ControllerRevision string      `json:"controllerRevision,omitempty"`
}

func podSidecarRevisions(pod *corev1.Pod, key string) map[string]podSidecarRevision {
	all := map[string]podSidecarRevision{}
	_ = json.Unmarshal([]byte(pod.Annotations[key]), &all) // an unreadable entry counts as none
	return all
}

// podRevision is the hash of the SidecarSet the pod carries under key.
func podRevision(pod *corev1.Pod, key, sidecarSet string) string {
	return podSidecarRevisions(pod, key)[sidecarSet].Hash
}

// setPodRevision writes the SidecarSet's entry under key, as UpdatePodSidecarSetHash does.
func setPodRevision(pod *corev1.Pod, key string, s *sidecarSet, hash string, now metav1.Time) {
	all := podSidecarRevisions(pod, key)
	var names []string
	for _, c := range s.Spec.Containers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	all[s.Name] = podSidecarRevision{UpdateTimestamp: now, Hash: hash, SidecarSetName: s.Name, SidecarList: names,
		ControllerRevision: s.Status.LatestRevision}
	raw, _ := json.Marshal(all)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = string(raw)
}

// podUpdated is IsPodSidecarUpdated: the pod carries the SidecarSet's current hash.
func (s *sidecarSet) podUpdated(pod *corev1.Pod) bool {
	return podRevision(pod, kruise.AnnotationSidecarHash, s.Name) == s.revision()
}

// matches is getMatchingPods' filter: selected (selector, spec.namespace), active, injected by
// this SidecarSet and still carrying each of its containers (IsPodConsistentWithSidecarSet).
func (s *sidecarSet) matches(pod *corev1.Pod) bool {
	if !s.selects(pod) {
		return false
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return s.injected(pod)
}

// selects is PodMatchedSidecarSet without namespaceSelector: spec.namespace and a non-empty
// selector matching the pod's labels.
func (s *sidecarSet) selects(pod *corev1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		return false
	}
	return s.Spec.Namespace == "" || pod.Namespace == s.Spec.Namespace
}

// injected is IsPodInjectedSidecarSet and IsPodConsistentWithSidecarSet: what the pod event
// handler checks before it acts for the SidecarSet.
func (s *sidecarSet) injected(pod *corev1.Pod) bool {
	if !kruise.Injected(pod.Annotations, s.Name) {
		return false
	}
	for _, c := range s.Spec.Containers {
		if containerNamed(pod, c.Name) == nil {
			return false
		}
	}
	return true
}

func containerNamed(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// sidecarUpdateState is one SidecarSet's entry in kruise.io/sidecarset-inplace-update-state:
// each updated container's imageID before the update (UpdatePodAnnotationsInUpgrade).
type sidecarUpdateState struct {
	Revision              string                       `json:"revision"`
	UpdateTimestamp       metav1.Time                  `json:"updateTimestamp"`
	LastContainerStatuses map[string]map[string]string `json:"lastContainerStatuses"`
}

// consistent is IsPodStateConsistent for the SidecarSet's containers (all of them when names is
// empty): every container reports a status, and each sidecar runs its spec's image: a digest
// image by its imageID, else by an imageID changed since the in-place update
// (IsSidecarContainerUpdateCompleted).
func (s *sidecarSet) consistent(pod *corev1.Pod, names ...string) bool {
	if len(pod.Spec.Containers) != len(pod.Status.ContainerStatuses) {
		return false
	}
	if len(names) == 0 {
		for _, c := range s.Spec.Containers {
			names = append(names, c.Name)
		}
	}
	statuses := map[string]corev1.ContainerStatus{}
	for _, cs := range pod.Status.ContainerStatuses {
		statuses[cs.Name] = cs
	}
	allDigest := true
	for _, n := range names {
		c := containerNamed(pod, n)
		if c == nil {
			continue
		}
		digest := strings.Index(c.Image, "@")
		if digest < 0 {
			allDigest = false
			break
		}
		if cs, ok := statuses[n]; !ok || !strings.HasSuffix(cs.ImageID, c.Image[digest+1:]) {
			return false
		}
	}
	if allDigest {
		return true
	}
	states := map[string]sidecarUpdateState{}
	raw, ok := pod.Annotations[annotationSidecarUpdateState]
	if !ok {
		return true // injected, never updated in place
	}
	if json.Unmarshal([]byte(raw), &states) != nil {
		return false
	}
	last := states[s.Name].LastContainerStatuses
	for _, n := range names {
		cs, ok := statuses[n]
		c := containerNamed(pod, n)
		if !ok || c == nil {
			continue
		}
		if before, ok := last[n]; ok && before["imageID"] == cs.ImageID && c.Image != cs.Image {
			return false
		}
	}
	return true
}

// runningReady is IsPodReady without hot upgrade: Running with condition Ready.
func runningReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && PodReady(pod)
}

// status is calculateStatus: ready counts pods consistent and Ready.
func (s *sidecarSet) status(pods []*corev1.Pod, latestRevision string) sidecarSetStatus {
	st := sidecarSetStatus{ObservedGeneration: s.Generation, MatchedPods: int32(len(pods)), LatestRevision: latestRevision}
	for _, pod := range pods {
		updated := s.podUpdated(pod)
		if updated {
			st.UpdatedPods++
		}
		if s.consistent(pod) && runningReady(pod) {
			st.ReadyPods++
			if updated {
				st.UpdatedReadyPods++
			}
		}
	}
	return st
}

// upgradable is IsSidecarSetUpgradable: only images may change in place, so a pod whose
// containers differ otherwise (hash without image) cannot be updated; a sidecar that is Ready but
// not yet on its spec's image is still being updated, and the pod waits.
func (s *sidecarSet) upgradable(pod *corev1.Pod) (canUpgrade, consistent bool) {
	if podRevision(pod, annotationSidecarHashNoImage, s.Name) != s.Annotations[annotationSidecarHashNoImage] {
		return false, false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		for _, c := range s.Spec.Containers {
			if cs.Name == c.Name && cs.Ready && !s.consistent(pod, c.Name) {
				return true, false
			}
		}
	}
	return true, true
}
