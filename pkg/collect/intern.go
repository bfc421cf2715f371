package collect

import (
	"bytes"
	"hash/maphash"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// interner shares what repeats across many pods' metadata: a metadata-only list decodes every
// occurrence of a namespace, label or owner into its own allocation. Identical label sets (the pods
// of one ReplicaSet) share one map and identical owner references one slice; other strings that
// repeat (namespaces, label and annotation keys, owners) are shared one by one. Values unique to
// one pod (names, UIDs, annotation values) are left alone, so the tables stay small. The snapshot is
// read-only, so sharing is invisible to the checks.
type interner struct {
	strs   map[string]string
	labels map[uint64][]map[string]string
	owners map[types.UID][][]metav1.OwnerReference
	fields map[uint64][][]byte
	seed   maphash.Seed
}

func newInterner() *interner {
	return &interner{strs: map[string]string{}, labels: map[uint64][]map[string]string{}, owners: map[types.UID][][]metav1.OwnerReference{},
		fields: map[uint64][][]byte{}, seed: maphash.MakeSeed()}
}

// managedFields shares the field sets of managedFields entries: the pods of one workload have
// the same ones, written by the same managers, and they are most of a full pod's metadata.
func (in *interner) managedFields(m *metav1.ObjectMeta) {
	for i := range m.ManagedFields {
		e := &m.ManagedFields[i]
		e.Manager, e.APIVersion, e.FieldsType, e.Subresource = in.str(e.Manager), in.str(e.APIVersion), in.str(e.FieldsType), in.str(e.Subresource)
		if e.FieldsV1 == nil || len(e.FieldsV1.Raw) == 0 {
			continue
		}
		raw := e.FieldsV1.Raw
		h := maphash.Bytes(in.seed, raw)
		shared := false
		for _, cand := range in.fields[h] {
			if bytes.Equal(cand, raw) {
				e.FieldsV1 = &metav1.FieldsV1{Raw: cand}
				shared = true
				break
			}
		}
		if !shared {
			in.fields[h] = append(in.fields[h], raw)
		}
	}
}

func (in *interner) str(s string) string {
	if v, ok := in.strs[s]; ok {
		return v
	}
	in.strs[s] = s
	return s
}

func (in *interner) meta(m *metav1.ObjectMeta) {
	m.Namespace = in.str(m.Namespace)
	m.GenerateName = in.str(m.GenerateName)
	m.Labels = in.labelSet(m.Labels)
	if len(m.Annotations) > 0 {
		annotations := make(map[string]string, len(m.Annotations))
		for k, v := range m.Annotations {
			annotations[in.str(k)] = v
		}
		m.Annotations = annotations
	}
	m.OwnerReferences = in.ownerRefs(m.OwnerReferences)
	for i, f := range m.Finalizers {
		m.Finalizers[i] = in.str(f)
	}
}

// labelSet returns a shared map equal to labels. The hash is order-independent, so no sorting.
func (in *interner) labelSet(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return labels
	}
	var h uint64
	for k, v := range labels {
		h += hashPair(k, v)
	}
	for _, cand := range in.labels[h] {
		if maps.Equal(cand, labels) {
			return cand
		}
	}
	shared := make(map[string]string, len(labels))
	for k, v := range labels {
		shared[in.str(k)] = in.str(v)
	}
	in.labels[h] = append(in.labels[h], shared)
	return shared
}

// hashPair is FNV-1a of key, a separator and value, mixed so that sums of pairs rarely collide.
func hashPair(k, v string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(k); i++ {
		h = (h ^ uint64(k[i])) * prime
	}
	h = (h ^ 0xff) * prime
	for i := 0; i < len(v); i++ {
		h = (h ^ uint64(v[i])) * prime
	}
	return h ^ (h >> 31)
}

// ownerRefs returns a shared slice equal to refs, keyed by the first owner's UID.
func (in *interner) ownerRefs(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	uid := refs[0].UID
	for _, cand := range in.owners[uid] {
		if slices.EqualFunc(cand, refs, ownerRefEqual) {
			return cand
		}
	}
	shared := slices.Clone(refs)
	for i := range shared {
		r := &shared[i]
		r.APIVersion, r.Kind, r.Name = in.str(r.APIVersion), in.str(r.Kind), in.str(r.Name)
		r.UID = types.UID(in.str(string(r.UID)))
	}
	in.owners[uid] = append(in.owners[uid], shared)
	return shared
}

func ownerRefEqual(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name &&
		boolPtrEqual(a.Controller, b.Controller) && boolPtrEqual(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

func boolPtrEqual(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
