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
		// JSON: the server does not speak protobuf for this list, or a capture asked for JSON.
		return decodeJSONList(br, list, func(dec *json.Decoder) error {
			var p metav1.PartialObjectMetadata
			if err := dec.Decode(&p); err != nil {
				return err
			}
			*item = p.ObjectMeta
			item.ManagedFields = nil
			maps.DeleteFunc(item.Annotations, func(k, _ string) bool { return !keep[k] })
			meta(item)
			return nil
		})
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
		return decodeJSONList(br, list, func(dec *json.Decoder) error {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return err
			}
			var id struct {
				Metadata struct {
					UID types.UID `json:"uid"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &id); err != nil || !want[id.Metadata.UID] {
				return err
			}
			p := &corev1.Pod{}
			if err := json.Unmarshal(raw, p); err != nil {
				return fmt.Errorf("pod: %w", err)
			}
			keep(p)
			return nil
		})
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

// decodeJSONList reads a JSON list one item at a time, as the protobuf path does, so that a list
// of 100k pods is never held whole: list gets the list metadata, item decodes each item from dec.
// The apiserver writes a built-in kind's list metadata before its items (k8s.io/apimachinery
// v1.37.1 pkg/runtime/serializer/json/collections.go, streamingEncodeList), so the next page can
// be asked for before this one is read; any other order is read too.
func decodeJSONList(r io.Reader, list func(*metav1.ListMeta), item func(dec *json.Decoder) error) error {
	dec := json.NewDecoder(r)
	if err := wantDelim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case "metadata":
			var lm metav1.ListMeta
			if err := dec.Decode(&lm); err != nil {
				return fmt.Errorf("list metadata: %w", err)
			}
			list(&lm)
		case "items":
			tok, err := dec.Token()
			switch {
			case err != nil:
				return err
			case tok == nil: // "items": null
				continue
			case tok != json.Delim('['):
				return fmt.Errorf("items: %v, want a list", tok)
			}
			for dec.More() {
				if err := item(dec); err != nil {
					return err
				}
			}
			if err := wantDelim(dec, ']'); err != nil {
				return err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	return wantDelim(dec, '}')
}

func wantDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("%v in a list, want %v", tok, d)
	}
	return nil
}
