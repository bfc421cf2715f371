package snapshot

import (
	"slices"
	"sort"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The lookups checks query the snapshot through, on the indices Index builds.

// Pod returns the metadata of the pod with the given UID (nil if there is none) and whether its
// full object was read.
func (s *Snapshot) Pod(uid types.UID) (*metav1.ObjectMeta, bool) {
	m := s.podByUID[uid]
	_, full := s.fullPodByUID[uid]
	return m, full
}

// FullPod returns the complete pod object, if it was read.
func (s *Snapshot) FullPod(uid types.UID) (*corev1.Pod, bool) {
	p, ok := s.fullPodByUID[uid]
	return p, ok
}

// PodsOwnedBy returns the metadata of the pods whose ownerReferences name the UID.
func (s *Snapshot) PodsOwnedBy(uid types.UID) []*metav1.ObjectMeta { return s.podsByOwner[uid] }

// ReplicaSetsOf returns the ReplicaSets read whose controller is the Deployment with the UID.
func (s *Snapshot) ReplicaSetsOf(uid types.UID) []*appsv1.ReplicaSet { return s.rsByOwner[uid] }

// ControlledPods returns the metadata of the pods whose controller ownerReference names the UID,
// in the order the snapshot lists them.
func (s *Snapshot) ControlledPods(uid types.UID) []*metav1.ObjectMeta {
	var out []*metav1.ObjectMeta
	for _, p := range s.podsByOwner[uid] {
		if ref := ControllerOf(p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// OwnedPods returns the pods a workload owns as its controller claims them: controlled by w, in
// its namespace and matching its selector, by name. A selector that cannot be parsed does not
// filter: the controller reference decides.
func (s *Snapshot) OwnedPods(w *kruise.Workload) []*metav1.ObjectMeta {
	return s.OwnedPodsOf(&w.ObjectMeta, w.Selector)
}

// OwnedPodsOf is OwnedPods of any controller: its metadata and its pod selector.
func (s *Snapshot) OwnedPodsOf(owner *metav1.ObjectMeta, selector *metav1.LabelSelector) []*metav1.ObjectMeta {
	var sel labels.Selector
	if selector != nil {
		if parsed, err := metav1.LabelSelectorAsSelector(selector); err == nil {
			sel = parsed
		}
	}
	var out []*metav1.ObjectMeta
	for _, p := range s.ControlledPods(owner.UID) {
		if p.Namespace != owner.Namespace || (sel != nil && !sel.Matches(labels.Set(p.Labels))) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PodsOnNode returns the fully read pods bound to a node.
func (s *Snapshot) PodsOnNode(name string) []*corev1.Pod { return s.podsByNode[name] }

// Node returns the node with the given name.
func (s *Snapshot) Node(name string) (*corev1.Node, bool) {
	n, ok := s.nodeByName[name]
	return n, ok
}

// NodeAbsent reports whether the scan knows that no node of this name exists: nodes were
// listed, or this name was read, and none came back. A name the scan never read is unknown,
// not absent: nothing may be concluded from it.
func (s *Snapshot) NodeAbsent(name string) bool {
	return s.absent(InputNodes, name, func() bool { _, ok := s.nodeByName[name]; return ok })
}

// NodeLeaseAbsent is NodeAbsent for a node's heartbeat Lease.
func (s *Snapshot) NodeLeaseAbsent(name string) bool {
	return s.absent(InputNodeLeases, name, func() bool { _, ok := s.nodeLease[name]; return ok })
}

func (s *Snapshot) absent(in Input, name string, found func() bool) bool {
	if name == "" || found() {
		return false
	}
	if _, unread := s.Unread[in]; unread {
		return false
	}
	return s.NodesByName == nil || s.NodesByName[name]
}

// NodesOfPods names the nodes that the pods read in full and the VolumeAttachments being
// deleted are bound to: the nodes whose state a check may judge.
func NodesOfPods(s *Snapshot) []string {
	var out []string
	for _, p := range s.FullPods {
		if p.Spec.NodeName != "" {
			out = append(out, p.Spec.NodeName)
		}
	}
	for _, va := range s.DeletedAttachments {
		out = append(out, va.Spec.NodeName)
	}
	return out
}

// NodeLease returns the heartbeat Lease of a node.
func (s *Snapshot) NodeLease(name string) (*coordinationv1.Lease, bool) {
	l, ok := s.nodeLease[name]
	return l, ok
}

// EventsFor returns the events about an object, newest last. Events match by UID, or by
// kind, namespace and name when the event carries no UID.
func (s *Snapshot) EventsFor(kind, namespace, name string, uid types.UID) []*corev1.Event {
	seen := map[*corev1.Event]bool{}
	var out []*corev1.Event
	for _, e := range s.eventsByUID[uid] {
		seen[e] = true
		out = append(out, e)
	}
	for _, e := range s.eventsByName[eventKey(kind, namespace, name)] {
		if !seen[e] && (e.InvolvedObject.UID == "" || e.InvolvedObject.UID == uid) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return EventTime(out[i]).Before(EventTime(out[j])) })
	return out
}

// EventTime is the last time an event was seen.
func EventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Workload returns the OpenKruise workload with the given UID.
func (s *Snapshot) Workload(uid types.UID) (*kruise.Workload, bool) {
	w, ok := s.workloadByUID[uid]
	return w, ok
}

// Namespace returns the namespace object with the given name.
func (s *Snapshot) Namespace(name string) (*corev1.Namespace, bool) {
	n, ok := s.namespaceByNm[name]
	return n, ok
}

// Deployment returns a Deployment by namespace and name.
func (s *Snapshot) Deployment(namespace, name string) (*appsv1.Deployment, bool) {
	for _, d := range s.Deployments {
		if d.Namespace == namespace && d.Name == name {
			return d, true
		}
	}
	return nil, false
}

// Lease returns a controller leader Lease by namespace and name.
func (s *Snapshot) Lease(namespace, name string) (*coordinationv1.Lease, bool) {
	for _, l := range s.Leases {
		if l.Namespace == namespace && l.Name == name {
			return l, true
		}
	}
	return nil, false
}

// ControllerPod returns a controller pod by namespace and name.
func (s *Snapshot) ControllerPod(namespace, name string) (*corev1.Pod, bool) {
	for _, p := range s.ControllerPods {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// ValidatingWebhookConfiguration returns a validating webhook configuration by name.
func (s *Snapshot) ValidatingWebhookConfiguration(name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, bool) {
	for _, c := range s.Admission.ValidatingWebhooks {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

// MutatingWebhookConfiguration returns a mutating webhook configuration by name.
func (s *Snapshot) MutatingWebhookConfiguration(name string) (*admissionregistrationv1.MutatingWebhookConfiguration, bool) {
	for _, c := range s.Admission.MutatingWebhooks {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

// BackendService returns the Service a webhook calls, as read; nil when it was not read (the
// Service of no webhook, or a read that failed). A Service found missing is read, with a nil
// Service.
func (s *Snapshot) BackendService(namespace, name string) *BackendService {
	return s.Admission.Services[namespace+"/"+name]
}

// ConversionCRD returns the CustomResourceDefinition read for a conversion failure of group
// and kind (spec.group, spec.names.kind); nil when none was read.
func (s *Snapshot) ConversionCRD(group, kind string) *unstructured.Unstructured {
	for _, crd := range s.Admission.ConversionCRDs {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		k, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if g == group && k == kind {
			return crd
		}
	}
	return nil
}

// ControllerOf returns the controller ownerReference of an object.
func ControllerOf(meta metav1.Object) *metav1.OwnerReference {
	for _, ref := range meta.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			r := ref
			return &r
		}
	}
	return nil
}

// WorkloadQuery is what a check searches every namespace's Deployments, StatefulSets and
// DaemonSets for: one field is set. The search itself stays the check's: a query only tells the
// collector which workloads must be held for it to give the answer a cluster-wide list would.
type WorkloadQuery struct {
	// Namespace asks for every workload of a namespace.
	Namespace string
	// Name asks for the workloads of this name, of any kind and namespace.
	Name string
	// Container asks for the workloads with a container (not an init container) of this name.
	Container string
	// ImageRepository asks for the workloads with a container whose image is from this
	// repository (knowledge.ImageRepository).
	ImageRepository string
}

func (q WorkloadQuery) String() string {
	switch {
	case q.Namespace != "":
		return "namespace " + q.Namespace
	case q.Name != "":
		return "named " + q.Name
	case q.Container != "":
		return "with container " + q.Container
	default:
		return "running image " + q.ImageRepository
	}
}

// AskWorkloads records that a check searches every namespace's workloads for qs while only the
// near ones and earlier searches' matches are held (ControllersNear). Checks run one at a time
// (checks.Run), so plain fields serve.
func (s *Snapshot) AskWorkloads(qs ...WorkloadQuery) {
	if !s.ControllersNear {
		return
	}
	for _, q := range qs {
		if !s.workloadsHeld[q] && !slices.Contains(s.workloadsAsked, q) {
			s.workloadsAsked = append(s.workloadsAsked, q)
		}
	}
}

// AskedWorkloads returns the searches checks made, since it was last called, whose matches are
// not held, and forgets them.
func (s *Snapshot) AskedWorkloads() []WorkloadQuery {
	qs := s.workloadsAsked
	s.workloadsAsked = nil
	return qs
}

// HoldWorkloads records that every workload of every namespace matching qs is held.
func (s *Snapshot) HoldWorkloads(qs ...WorkloadQuery) {
	if s.workloadsHeld == nil {
		s.workloadsHeld = map[WorkloadQuery]bool{}
	}
	for _, q := range qs {
		s.workloadsHeld[q] = true
	}
}
