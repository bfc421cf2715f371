package kruise

import (
	"encoding/json"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SidecarSet update strategy types (apps/v1beta1 sidecarset_types.go, kruise v1.9.0).
const SidecarSetNotUpdate = "NotUpdate"

// SidecarSetStrategy is the part of a SidecarSet's spec.updateStrategy that holds pods back.
type SidecarSetStrategy struct {
	Type   string
	Paused bool
	// Partition is how many matched pods stay on the old sidecars, resolved against matchedPods
	// as the controller does (util.CalculatePartitionReplicas).
	Partition *int32
	// Selective is true when updateStrategy.selector limits the pods updated.
	Selective bool
}

// SidecarSetStatus is what the SidecarSet controller writes (calculateStatus,
// pkg/controller/sidecarset/sidecarset_processor.go).
type SidecarSetStatus struct {
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	MatchedPods        int32  `json:"matchedPods"`
	UpdatedPods        int32  `json:"updatedPods"`
	ReadyPods          int32  `json:"readyPods"`
	UpdatedReadyPods   int32  `json:"updatedReadyPods,omitempty"`
	LatestRevision     string `json:"latestRevision,omitempty"`
}

type sidecarSetSpec struct {
	Containers     []corev1.Container     `json:"containers"`
	Selector       *metav1.LabelSelector  `json:"selector"`
	UpdateStrategy sidecarSetStrategySpec `json:"updateStrategy"`
}

type sidecarSetStrategySpec struct {
	Type      string                `json:"type"`
	Paused    bool                  `json:"paused"`
	Partition *intOrString          `json:"partition"`
	Selector  *metav1.LabelSelector `json:"selector"`
}

func (s sidecarSetStrategySpec) strategy(matched int32) SidecarSetStrategy {
	return SidecarSetStrategy{Type: s.Type, Paused: s.Paused, Partition: cloneSetPartition(s.Partition, matched), Selective: s.Selector != nil}
}

// Hash is the SidecarSet's current revision hash, the one its pods are updated to.
func (s *SidecarSet) Hash() string { return s.Annotations[AnnotationSidecarHash] }

// HashWithoutImage is the SidecarSet's hash of everything but its images.
func (s *SidecarSet) HashWithoutImage() string {
	return s.Annotations[AnnotationSidecarHashWithoutImage]
}

// Upgradable reports whether the SidecarSet's controller may update the pod in place: only when
// the pod's hash without images equals the SidecarSet's, since only images change in place
// (commonControl.IsSidecarSetUpgradable, pkg/control/sidecarcontrol/sidecarset_control.go,
// kruise v1.9.0). Any other change waits for the pod to be recreated, by design.
func (s *SidecarSet) Upgradable(podAnnotations map[string]string) bool {
	var all map[string]PodSidecarRevision
	_ = json.Unmarshal([]byte(podAnnotations[AnnotationSidecarHashWithoutImage]), &all)
	return all[s.Name].Hash == s.HashWithoutImage()
}

// PodSidecarRevision is one SidecarSet's entry in a pod's kruise.io/sidecarset-hash annotation.
type PodSidecarRevision struct {
	Hash            string      `json:"hash"`
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
}

// PodSidecarRevisionOf reads the named SidecarSet's entry from a pod's annotations.
func PodSidecarRevisionOf(annotations map[string]string, sidecarSet string) (PodSidecarRevision, bool) {
	var all map[string]PodSidecarRevision
	if json.Unmarshal([]byte(annotations[AnnotationSidecarHash]), &all) != nil {
		return PodSidecarRevision{}, false
	}
	r, ok := all[sidecarSet]
	return r, ok
}

// Injected reports whether a pod's injected list names the SidecarSet.
func Injected(annotations map[string]string, sidecarSet string) bool {
	for _, n := range strings.Split(annotations[AnnotationSidecarInjects], ",") {
		if strings.TrimSpace(n) == sidecarSet {
			return true
		}
	}
	return false
}

// inFlightMessage is the SidecarSet controller's line when its update expectations for the
// matched pods are unsatisfied (UpdateSidecarSet, sidecarset_processor.go, kruise v1.9.0, V(3)).
const inFlightMessage = "Sidecarset matched pods has some update in flight, will sync later"

// IsSidecarSetInFlightLine reports whether a manager log line is the SidecarSet controller's
// "update in flight" line, which the collector keeps with the expectation lines.
func IsSidecarSetInFlightLine(line string) bool { return strings.Contains(line, "update in flight") }

// InFlightLog is one "update in flight" line: the SidecarSet it names (the form logged after
// the update expectations) or the pod (the form logged on an unsatisfied resourceVersion).
type InFlightLog struct {
	Time       time.Time
	SidecarSet string
	// Pod is "namespace/name".
	Pod  string
	Line string
}

// ParseInFlightLogs returns the "update in flight" lines of a kept manager log.
func ParseInFlightLogs(text string, now time.Time) []InFlightLog {
	var out []InFlightLog
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		i := strings.Index(line, `"`+inFlightMessage+`"`)
		if i < 0 {
			continue
		}
		l := InFlightLog{Line: line}
		head := line[:i]
		if sp := strings.IndexByte(head, ' '); sp > 0 {
			if t, err := time.Parse(time.RFC3339Nano, head[:sp]); err == nil {
				l.Time, head = t, strings.TrimSpace(head[sp+1:])
			}
		}
		if t, _, ok := splitKlogHeader(head+`""`, now); ok && l.Time.IsZero() {
			l.Time = t
		}
		kvs := parseKVs(line[i+len(inFlightMessage)+2:])
		l.SidecarSet, l.Pod = kvs["sidecarSet"], kvs["pod"]
		out = append(out, l)
	}
	return out
}
