package kruisemanager

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// updateExpectations are kruise's UpdateExpectations as the SidecarSet controller keeps them
// (pkg/util/expectations/update_expectations.go, v1.9.0), in the leader's memory only: per
// SidecarSet, the revision it updates pods to and the pods ("namespace/name") updated and not
// yet seen carrying it. An entry is cleared when the controller lists the pod on the revision
// (ObserveUpdated), when the pod's delete event is handled (DeleteObject), or when the
// SidecarSet moves to another revision. A pod deleted and its event handled before its entry was
// made is never cleared: the expectation leaks until the process restarts
// (openkruise/kruise#1168, #2253).
type updateExpectations struct {
	mu sync.Mutex
	m  map[string]*updateEntry
}

type updateEntry struct {
	revision string
	pods     map[string]bool
}

func newUpdateExpectations() *updateExpectations {
	return &updateExpectations{m: map[string]*updateEntry{}}
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// expectUpdated is ExpectUpdated: a new revision starts a new entry.
func (e *updateExpectations) expectUpdated(sidecarSet, revision string, pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.m[sidecarSet]
	if en == nil || en.revision != revision {
		en = &updateEntry{revision: revision, pods: map[string]bool{}}
		e.m[sidecarSet] = en
	}
	en.pods[podKey(pod)] = true
}

// observeUpdated is ObserveUpdated: the pod as listed carries the revision; an entry of another
// revision, or an empty one, is dropped.
func (e *updateExpectations) observeUpdated(sidecarSet, revision string, pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.m[sidecarSet]
	if en == nil {
		return
	}
	if en.revision == revision && podRevision(pod, kruise.AnnotationSidecarHash, sidecarSet) == revision {
		delete(en.pods, podKey(pod))
	}
	if en.revision != revision || len(en.pods) == 0 {
		delete(e.m, sidecarSet)
	}
}

// deleteObject is DeleteObject, called by the pod delete handler.
func (e *updateExpectations) deleteObject(sidecarSet string, pod *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := e.m[sidecarSet]; en != nil {
		delete(en.pods, podKey(pod))
	}
}

// satisfied is SatisfiedExpectations: true unless pods updated to the revision are still
// expected, which it returns.
func (e *updateExpectations) satisfied(sidecarSet, revision string) (bool, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.m[sidecarSet]
	if en == nil || en.revision != revision || len(en.pods) == 0 {
		return true, nil
	}
	var pods []string
	for k := range en.pods {
		pods = append(pods, k)
	}
	sort.Strings(pods)
	return false, pods
}
