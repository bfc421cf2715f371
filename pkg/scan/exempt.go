package scan

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/exempt"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ownerDepth bounds the controller chain walked for annotations: pod, ReplicaSet, Deployment,
// and one more for operators that own workloads.
const ownerDepth = 3

// annotate adds what the objects' metadata says to the findings: their kustomize origin, and,
// with a policy, the exemptions that hold them back (moved to r.Suppressed) or that cannot be
// honoured (r.Warnings). Every scan, `why` and the auditor come through here.
func annotate(r *report.Report, snap *snapshot.Snapshot, p *exempt.Policy) {
	if len(r.Findings) == 0 {
		return
	}
	metas := indexMeta(snap)
	subjects := make([]exempt.Subject, 0, len(r.Findings))
	for i := range r.Findings {
		s := subject(r.Findings[i], snap, metas)
		r.Findings[i].Origin = origin(s.Holders)
		s.Finding = r.Findings[i]
		subjects = append(subjects, s)
	}
	if p == nil {
		return
	}
	res := p.Apply(snap.Now, subjects)
	r.Findings, r.Suppressed, r.Warnings = res.Findings, res.Suppressed, res.Warnings
}

// origin is the nearest kustomize origin among the object and its owners: a pod has none of its
// own, its Deployment has.
func origin(hs []exempt.Holder) *report.Origin {
	for _, h := range hs {
		v, ok := h.Annotations[report.OriginAnnotation]
		if !ok || h.Role == exempt.RoleNamespace {
			continue
		}
		var o report.Origin
		if err := yaml.Unmarshal([]byte(v), &o); err == nil && o.Path != "" {
			return &o
		}
	}
	return nil
}

// subject gathers what may exempt f: the object's labels and annotations, its controllers' up
// the chain, and its namespace's.
func subject(f report.Finding, snap *snapshot.Snapshot, metas metaIndex) exempt.Subject {
	s := exempt.Subject{Finding: f}
	obj, ok := metas.find(f.Object)
	s.Holders = append(s.Holders, holder(f.Object, exempt.RoleObject, obj, ok))
	if ok {
		s.Labels, s.LabelsRead = obj.GetLabels(), true
	}
	owner := f.Owner
	if owner == nil && ok {
		owner = refOf(f.Object.Namespace, snapshot.ControllerOf(obj))
	}
	for depth := 0; owner != nil && depth < ownerDepth; depth++ {
		m, ok := metas.find(*owner)
		s.Holders = append(s.Holders, holder(*owner, exempt.RoleOwner, m, ok))
		if !ok {
			break
		}
		owner = refOf(owner.Namespace, snapshot.ControllerOf(m))
	}
	if ns := f.Object.Namespace; ns != "" {
		ref := report.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: ns}
		n, ok := snap.Namespace(ns)
		var m metav1.Object
		if ok {
			m = n
		}
		s.Holders = append(s.Holders, holder(ref, exempt.RoleNamespace, m, ok))
	}
	return s
}

func holder(ref report.ObjectRef, role string, m metav1.Object, ok bool) exempt.Holder {
	h := exempt.Holder{Ref: ref, Role: role, Read: ok}
	if ok {
		h.Annotations = m.GetAnnotations()
	}
	return h
}

func refOf(namespace string, ref *metav1.OwnerReference) *report.ObjectRef {
	if ref == nil {
		return nil
	}
	return &report.ObjectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: namespace, Name: ref.Name, UID: string(ref.UID)}
}

// metaIndex finds the metadata a snapshot holds of an object, by UID or by kind and name. Pods
// are looked up in the snapshot's own index: a copy of 100k pods' entries would cost the scan
// memory and time for the few that have findings.
type metaIndex struct {
	snap   *snapshot.Snapshot
	byUID  map[types.UID]metav1.Object
	byName map[string]metav1.Object
}

func nameKey(kind, namespace, name string) string {
	return strings.ToLower(kind) + "/" + namespace + "/" + name
}

func (x metaIndex) add(kind string, m metav1.Object) {
	if m.GetUID() != "" {
		x.byUID[m.GetUID()] = m
	}
	x.byName[nameKey(kind, m.GetNamespace(), m.GetName())] = m
}

func (x metaIndex) find(ref report.ObjectRef) (metav1.Object, bool) {
	if ref.Kind == "Pod" && ref.APIVersion == "v1" && ref.UID != "" {
		// Pod's bool says whether the pod was read in full; nil means it was not listed.
		if m, _ := x.snap.Pod(types.UID(ref.UID)); m != nil {
			return m, true
		}
	}
	if m, ok := x.byUID[types.UID(ref.UID)]; ok && ref.UID != "" {
		return m, true
	}
	m, ok := x.byName[nameKey(ref.Kind, ref.Namespace, ref.Name)]
	// A name match with another UID is another object of that name.
	if ok && ref.UID != "" && m.GetUID() != "" && string(m.GetUID()) != ref.UID {
		return nil, false
	}
	return m, ok
}

// indexMeta indexes the metadata of every object the snapshot holds but its pods (find looks
// them up). Pods listed metadata-only keep the ignore annotations (Run asks the collector to).
func indexMeta(s *snapshot.Snapshot) metaIndex {
	x := metaIndex{snap: s, byUID: map[types.UID]metav1.Object{}, byName: map[string]metav1.Object{}}
	addAll(x, "Pod", s.ControllerPods)
	addAll(x, "Namespace", s.Namespaces)
	addAll(x, "Node", s.Nodes)
	for _, w := range s.Workloads {
		x.add(w.Kind, w)
	}
	addAll(x, "Deployment", s.Deployments)
	addAll(x, "StatefulSet", s.StatefulSets)
	addAll(x, "DaemonSet", s.DaemonSets)
	addAll(x, "ReplicaSet", s.ReplicaSets)
	addAll(x, "SidecarSet", s.SidecarSets)
	addAll(x, "PersistentVolume", s.PersistentVolumes)
	addAll(x, "Service", s.DeletedServices)
	addAll(x, "VolumeAttachment", s.DeletedAttachments)
	for _, c := range s.Clusters {
		x.add(c.GetKind(), c)
	}
	addAll(x, "APIService", s.APIServices)
	// Objects being deleted last: a kind read whole above is the better copy.
	for _, o := range s.Objects {
		if _, ok := x.byUID[o.Meta.UID]; !ok {
			x.add(o.Kind, o.Meta)
		}
	}
	return x
}

// addAll indexes objects of one kind.
func addAll[T metav1.Object](x metaIndex, kind string, objs []T) {
	for _, o := range objs {
		x.add(kind, o)
	}
}

// readOwnerReplicaSets reads, when exemption annotations are honoured, the ReplicaSets that own
// findings' objects and that the scan did not read: a Deployment's pod is exempted by an
// annotation on its ReplicaSet or its Deployment, and ReplicaSets are read only for stalled
// rollouts. One metadata-only LIST of the scope covers them all, whatever their number; a failed
// read leaves them unread, and the exemption's warning says so.
func readOwnerReplicaSets(ctx context.Context, c collect.Clients, r *report.Report, snap *snapshot.Snapshot, p *exempt.Policy) {
	if p == nil || !p.Annotations || len(r.Findings) == 0 {
		return
	}
	metas := indexMeta(snap)
	missing := map[types.UID]bool{}
	for _, f := range r.Findings {
		for _, h := range subject(f, snap, metas).Holders {
			if !h.Read && h.Role == exempt.RoleOwner && h.Ref.Kind == "ReplicaSet" && h.Ref.APIVersion == "apps/v1" && h.Ref.UID != "" {
				missing[types.UID(h.Ref.UID)] = true
			}
		}
	}
	if len(missing) == 0 {
		return
	}
	ns := snap.Scope.Namespace
	if snap.Scope.AllNamespaces {
		ns = ""
	}
	l, err := c.Metadata.Resource(appsv1.SchemeGroupVersion.WithResource("replicasets")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range l.Items {
		m := &l.Items[i]
		if missing[m.UID] {
			m.ManagedFields = nil
			snap.ReplicaSets = append(snap.ReplicaSets, &appsv1.ReplicaSet{TypeMeta: m.TypeMeta, ObjectMeta: m.ObjectMeta})
		}
	}
}
