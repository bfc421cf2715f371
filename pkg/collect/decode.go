package collect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect/internal/protolist"
)

// Field numbers of the protobuf messages picked apart here (k8s.io/apimachinery and k8s.io/api
// generated.proto).
const (
	fieldPartialMeta        = 1  // PartialObjectMetadata.metadata
	fieldPodMetadata        = 1  // Pod.metadata
	fieldObjectUID          = 5  // ObjectMeta.uid
	fieldObjectAnnotation   = 12 // ObjectMeta.annotations, one map entry per field
	fieldMapEntryKey        = 1  // the key of a map entry
	fieldObjectManagedField = 17 // ObjectMeta.managedFields
)

// decodeMetaPage reads one PartialObjectMetadataList response, protobuf or JSON. It calls list
// when the list metadata arrives, and meta for each item, decoded into *item (reused), without
// managedFields and with only the annotations in keep.
func decodeMetaPage(body io.Reader, item *metav1.ObjectMeta, keep map[string]bool, list func(*metav1.ListMeta), meta func(*metav1.ObjectMeta)) error {
	br := bufio.NewReaderSize(body, 64<<10)
	if !protolist.IsProtobuf(br) {
		// JSON: the server does not speak protobuf for this list.
		var l metav1.PartialObjectMetadataList
		if err := json.NewDecoder(br).Decode(&l); err != nil {
			return err
		}
		list(&l.ListMeta)
		for i := range l.Items {
			*item = l.Items[i].ObjectMeta
			item.ManagedFields = nil
			maps.DeleteFunc(item.Annotations, func(k, _ string) bool { return !keep[k] })
			meta(item)
		}
		return nil
	}
	return protolist.Decode(br, list, func(raw []byte) error {
		m, err := protolist.Field(raw, fieldPartialMeta)
		if err != nil {
			return err
		}
		*item = metav1.ObjectMeta{}
		m = protolist.DropFields(m, func(num uint64, content []byte) bool {
			if num == fieldObjectAnnotation {
				key, err := protolist.Field(content, fieldMapEntryKey)
				return err == nil && !keep[string(key)]
			}
			return num == fieldObjectManagedField
		})
		if err := item.Unmarshal(m); err != nil {
			return fmt.Errorf("pod metadata: %w", err)
		}
		meta(item)
		return nil
	})
}

// decodePodPage reads one PodList response, protobuf or JSON, and calls keep with each pod whose
// UID is in want. Other pods are skipped in protobuf without being decoded.
func decodePodPage(body io.Reader, list func(*metav1.ListMeta), want map[types.UID]bool, keep func(*corev1.Pod)) error {
	br := bufio.NewReaderSize(body, 64<<10)
	if !protolist.IsProtobuf(br) {
		var l corev1.PodList
		if err := json.NewDecoder(br).Decode(&l); err != nil {
			return err
		}
		list(&l.ListMeta)
		for i := range l.Items {
			if p := l.Items[i]; want[p.UID] {
				keep(&p)
			}
		}
		return nil
	}
	return protolist.Decode(br, list, func(raw []byte) error {
		meta, err := protolist.Field(raw, fieldPodMetadata)
		if err != nil {
			return err
		}
		uid, err := protolist.Field(meta, fieldObjectUID)
		if err != nil || !want[types.UID(uid)] {
			return err
		}
		p := &corev1.Pod{}
		if err := p.Unmarshal(raw); err != nil {
			return fmt.Errorf("pod: %w", err)
		}
		keep(p)
		return nil
	})
}
