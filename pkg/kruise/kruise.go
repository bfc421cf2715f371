// Package kruise holds the project's own small view of OpenKruise objects (CloneSet, Advanced
// StatefulSet, Advanced DaemonSet, SidecarSet): only the fields the checks read, decoded from
// unstructured objects so the plugin does not depend on OpenKruise's Go module.
package kruise

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the OpenKruise API group.
const Group = "apps.kruise.io"

// Labels and annotations OpenKruise puts on pods.
const (
	LabelLifecycleState      = "lifecycle.apps.kruise.io/state"
	AnnotationLifecycleTime  = "lifecycle.apps.kruise.io/timestamp"
	AnnotationInPlaceState   = "apps.kruise.io/inplace-update-state"
	AnnotationSidecarInjects = "kruise.io/sidecarset-injected-list"
	AnnotationSidecarHash    = "kruise.io/sidecarset-hash"
	// AnnotationSidecarHashWithoutImage is the same, of everything but the images.
	AnnotationSidecarHashWithoutImage = "kruise.io/sidecarset-hash-without-image"
	ConditionInPlaceReady             = "InPlaceUpdateReady"
	EnvSidecarInjected                = "IS_INJECTED"
)

// Lifecycle states of a pod.
const (
	StatePreparingNormal = "PreparingNormal"
	StateNormal          = "Normal"
	StatePreparingUpdate = "PreparingUpdate"
	StateUpdating        = "Updating"
	StateUpdated         = "Updated"
	StatePreparingDelete = "PreparingDelete"
)

// Kinds the checks read.
const (
	KindCloneSet    = "CloneSet"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindSidecarSet  = "SidecarSet"
)

// Resources OpenKruise serves. The version is the one read; discovery decides whether it exists.
var (
	CloneSets    = schema.GroupVersionResource{Group: Group, Version: "v1alpha1", Resource: "clonesets"}
	StatefulSets = schema.GroupVersionResource{Group: Group, Version: "v1beta1", Resource: "statefulsets"}
	DaemonSets   = schema.GroupVersionResource{Group: Group, Version: "v1alpha1", Resource: "daemonsets"}
	SidecarSets  = schema.GroupVersionResource{Group: Group, Version: "v1alpha1", Resource: "sidecarsets"}
)

// LifecycleHook is one of spec.lifecycle.preNormal|preDelete|inPlaceUpdate.
type LifecycleHook struct {
	FinalizersHandler []string          `json:"finalizersHandler,omitempty"`
	LabelsHandler     map[string]string `json:"labelsHandler,omitempty"`
	MarkPodNotReady   bool              `json:"markPodNotReady,omitempty"`
}

// Empty reports whether the hook asks for nothing.
func (h *LifecycleHook) Empty() bool {
	return h == nil || (len(h.FinalizersHandler) == 0 && len(h.LabelsHandler) == 0)
}

// Lifecycle is a workload's spec.lifecycle.
type Lifecycle struct {
	PreDelete     *LifecycleHook `json:"preDelete,omitempty"`
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty"`
	PreNormal     *LifecycleHook `json:"preNormal,omitempty"`
}

// Update strategies that update pods in place.
const (
	UpdateInPlaceIfPossible = "InPlaceIfPossible"
	UpdateInPlaceOnly       = "InPlaceOnly"
	UpdateReCreate          = "ReCreate"
	UpdateOnDelete          = "OnDelete"
)

// WorkloadStatus is the status fields shared by the Kruise workloads.
type WorkloadStatus struct {
	ObservedGeneration   int64               `json:"observedGeneration,omitempty"`
	Replicas             int32               `json:"replicas,omitempty"`
	ReadyReplicas        int32               `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32               `json:"availableReplicas,omitempty"`
	UpdatedReplicas      int32               `json:"updatedReplicas,omitempty"`
	UpdatedReadyReplicas int32               `json:"updatedReadyReplicas,omitempty"`
	UpdateRevision       string              `json:"updateRevision,omitempty"`
	CurrentRevision      string              `json:"currentRevision,omitempty"`
	RawConditions        []WorkloadCondition `json:"conditions,omitempty"`
	LabelSelector        string              `json:"labelSelector,omitempty"`
	// DaemonSetHash is an Advanced DaemonSet's update revision: the hash its pods' revision
	// label carries (it has no updateRevision).
	DaemonSetHash string `json:"daemonSetHash,omitempty"`
	// DesiredNumberScheduled is an Advanced DaemonSet's pod count, which a percent partition scales.
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled,omitempty"`
	// UpdatedNumberScheduled is an Advanced DaemonSet's count of pods on its update revision.
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled,omitempty"`
	// NumberReady is an Advanced DaemonSet's count of nodes whose pod, of any revision, is Ready.
	NumberReady int32 `json:"numberReady,omitempty"`
}

// WorkloadCondition is a status condition in the loose form Kruise writes.
type WorkloadCondition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// Workload is the common view of a CloneSet, Advanced StatefulSet or Advanced DaemonSet.
type Workload struct {
	APIVersion string
	Kind       string
	metav1.ObjectMeta
	// Replicas is nil for DaemonSets.
	Replicas  *int32
	Selector  *metav1.LabelSelector
	Template  corev1.PodTemplateSpec
	Lifecycle Lifecycle
	// UpdateType is how pods are updated: ReCreate, InPlaceIfPossible, InPlaceOnly or OnDelete.
	UpdateType string
	// Paused is true when the update strategy is paused.
	Paused bool
	// Partition holds back that many pods on the old revision (CloneSet, Advanced StatefulSet,
	// Advanced DaemonSet); a percentage is resolved the way the controller scales it.
	Partition *int32
	// UnorderedUpdate is true for an Advanced StatefulSet with rollingUpdate.unorderedUpdate: its
	// partition counts pods rather than ordinals.
	UnorderedUpdate bool
	// Scaling is what a CloneSet's controller counts with when it scales (CloneSets only).
	Scaling CloneSetScaling
	// ProgressDeadlineSeconds is a CloneSet's spec.progressDeadlineSeconds (kruise v1.9.0), nil
	// when unset or for other kinds.
	ProgressDeadlineSeconds *int32
	Status                  WorkloadStatus
}

// InPlace reports whether the workload updates pods in place.
func (w *Workload) InPlace() bool {
	return w.UpdateType == UpdateInPlaceIfPossible || w.UpdateType == UpdateInPlaceOnly
}

// Condition returns the status condition of the given type.
func (w *Workload) Condition(t string) (WorkloadCondition, bool) {
	for _, c := range w.Status.RawConditions {
		if c.Type == t {
			return c, true
		}
	}
	return WorkloadCondition{}, false
}

type intOrString = json.RawMessage

type cloneSetSpec struct {
	Replicas                *int32                 `json:"replicas"`
	ProgressDeadlineSeconds *int32                 `json:"progressDeadlineSeconds"`
	Selector                *metav1.LabelSelector  `json:"selector"`
	Template                corev1.PodTemplateSpec `json:"template"`
	Lifecycle               *Lifecycle             `json:"lifecycle"`
	UpdateStrategy          struct {
		Type      string       `json:"type"`
		Paused    bool         `json:"paused"`
		Partition *intOrString `json:"partition"`
	} `json:"updateStrategy"`
}

type statefulSetSpec struct {
	Replicas       *int32                 `json:"replicas"`
	Selector       *metav1.LabelSelector  `json:"selector"`
	Template       corev1.PodTemplateSpec `json:"template"`
	Lifecycle      *Lifecycle             `json:"lifecycle"`
	UpdateStrategy struct {
		Type          string `json:"type"`
		RollingUpdate *struct {
			PodUpdatePolicy string          `json:"podUpdatePolicy"`
			Paused          bool            `json:"paused"`
			Partition       *int32          `json:"partition"`
			UnorderedUpdate json.RawMessage `json:"unorderedUpdate"`
		} `json:"rollingUpdate"`
	} `json:"updateStrategy"`
}

type daemonSetSpec struct {
	Selector       *metav1.LabelSelector  `json:"selector"`
	Template       corev1.PodTemplateSpec `json:"template"`
	Lifecycle      *Lifecycle             `json:"lifecycle"`
	UpdateStrategy struct {
		Type          string `json:"type"`
		RollingUpdate *struct {
			// Type is Standard or InPlaceIfPossible (v1alpha1 RollingUpdateDaemonSet).
			Type      string       `json:"rollingUpdateType"`
			Paused    bool         `json:"paused"`
			Partition *intOrString `json:"partition"`
		} `json:"rollingUpdate"`
	} `json:"updateStrategy"`
}

type object[S any] struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       S                 `json:"spec"`
	Status     WorkloadStatus    `json:"status"`
}

func decode[S any](u *unstructured.Unstructured) (*object[S], error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	var o object[S]
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("decode %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return &o, nil
}

// WorkloadFromUnstructured decodes a CloneSet, Advanced StatefulSet or Advanced DaemonSet.
func WorkloadFromUnstructured(u *unstructured.Unstructured) (*Workload, error) {
	switch u.GetKind() {
	case KindCloneSet:
		o, err := decode[cloneSetSpec](u)
		if err != nil {
			return nil, err
		}
		w := base(o.APIVersion, o.Kind, o.Metadata, o.Status, o.Spec.Selector, o.Spec.Template, o.Spec.Lifecycle)
		w.Replicas = o.Spec.Replicas
		w.UpdateType = o.Spec.UpdateStrategy.Type
		if w.UpdateType == "" {
			w.UpdateType = UpdateReCreate
		}
		w.Paused = o.Spec.UpdateStrategy.Paused
		replicas := int32(1)
		if w.Replicas != nil {
			replicas = *w.Replicas
		}
		w.Partition = cloneSetPartition(o.Spec.UpdateStrategy.Partition, replicas)
		w.Scaling = cloneSetScaling(u)
		w.ProgressDeadlineSeconds = o.Spec.ProgressDeadlineSeconds
		return w, nil
	case KindStatefulSet:
		o, err := decode[statefulSetSpec](u)
		if err != nil {
			return nil, err
		}
		w := base(o.APIVersion, o.Kind, o.Metadata, o.Status, o.Spec.Selector, o.Spec.Template, o.Spec.Lifecycle)
		w.Replicas = o.Spec.Replicas
		w.UpdateType = UpdateReCreate
		if o.Spec.UpdateStrategy.Type == UpdateOnDelete {
			w.UpdateType = UpdateOnDelete
		}
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			if ru.PodUpdatePolicy != "" && w.UpdateType != UpdateOnDelete {
				w.UpdateType = ru.PodUpdatePolicy
			}
			w.Paused = ru.Paused
			w.Partition = ru.Partition
			w.UnorderedUpdate = len(ru.UnorderedUpdate) > 0 && string(ru.UnorderedUpdate) != "null"
		}
		return w, nil
	case KindDaemonSet:
		o, err := decode[daemonSetSpec](u)
		if err != nil {
			return nil, err
		}
		w := base(o.APIVersion, o.Kind, o.Metadata, o.Status, o.Spec.Selector, o.Spec.Template, o.Spec.Lifecycle)
		w.UpdateType = UpdateReCreate
		if o.Spec.UpdateStrategy.Type == UpdateOnDelete {
			w.UpdateType = UpdateOnDelete
		}
		if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			if ru.Type == UpdateInPlaceIfPossible && w.UpdateType != UpdateOnDelete {
				w.UpdateType = UpdateInPlaceIfPossible
			}
			w.Paused = ru.Paused
			w.Partition = scaledPartition(ru.Partition, o.Status.DesiredNumberScheduled, false)
		}
		return w, nil
	}
	return nil, fmt.Errorf("%s %s/%s is not an OpenKruise workload", u.GetKind(), u.GetNamespace(), u.GetName())
}

func base(apiVersion, kind string, meta metav1.ObjectMeta, status WorkloadStatus, sel *metav1.LabelSelector,
	tmpl corev1.PodTemplateSpec, lc *Lifecycle) *Workload {
	w := &Workload{APIVersion: apiVersion, Kind: kind, ObjectMeta: meta, Status: status, Selector: sel, Template: tmpl}
	if lc != nil {
		w.Lifecycle = *lc
	}
	return w
}

// SidecarSet is the part of a SidecarSet the checks read.
type SidecarSet struct {
	metav1.ObjectMeta
	Containers []corev1.Container
	Selector   *metav1.LabelSelector
	// Strategy is spec.updateStrategy and Status the counts its controller writes (sidecarset.go).
	Strategy SidecarSetStrategy
	Status   SidecarSetStatus
}

// SidecarSetFromUnstructured decodes a SidecarSet.
func SidecarSetFromUnstructured(u *unstructured.Unstructured) (*SidecarSet, error) {
	o, err := decode[sidecarSetSpec](u)
	if err != nil {
		return nil, err
	}
	var st SidecarSetStatus
	if raw, err := json.Marshal(u.Object["status"]); err == nil {
		_ = json.Unmarshal(raw, &st) // a status that does not decode counts as none written yet
	}
	return &SidecarSet{ObjectMeta: o.Metadata, Containers: o.Spec.Containers, Selector: o.Spec.Selector,
		Strategy: o.Spec.UpdateStrategy.strategy(st.MatchedPods), Status: st}, nil
}

// Manager flags and defaults (kruise-manager's main.go and Helm chart).
const (
	ManagerContainer         = "manager"
	ManagerImageRepository   = "kruise-manager"
	DefaultLeaderElectionID  = "kruise-manager"
	DefaultExpectationTimout = "5m"
)

// LeaderLease returns where the manager keeps its leader Lease: --leader-election-namespace
// (default: the manager's namespace) and --leader-election-id (default kruise-manager).
func LeaderLease(managerNamespace string, args []string) (namespace, name string) {
	namespace, name = managerNamespace, DefaultLeaderElectionID
	for i := 0; i < len(args); i++ {
		for flag, dst := range map[string]*string{"leader-election-namespace": &namespace, "leader-election-id": &name} {
			switch {
			case strings.HasPrefix(args[i], "--"+flag+"="):
				*dst = strings.TrimPrefix(args[i], "--"+flag+"=")
			case args[i] == "--"+flag && i+1 < len(args):
				*dst = args[i+1]
			}
		}
	}
	return namespace, name
}

// HolderPod returns the pod name in a Lease holderIdentity ("<pod name>_<uuid>").
func HolderPod(holderIdentity string) string {
	if i := strings.LastIndexByte(holderIdentity, '_'); i > 0 {
		return holderIdentity[:i]
	}
	return holderIdentity
}

// IsExpectationLogLine reports whether a manager log line is about expectations, the only lines
// the plugin keeps from the manager's log.
func IsExpectationLogLine(line string) bool {
	return strings.Contains(line, "xpectation") || strings.Contains(line, "Not satisfied")
}
