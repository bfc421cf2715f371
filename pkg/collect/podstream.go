package collect

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// The bulk pod list is read as a stream of PartialObjectMetadata in protobuf, by hand rather than
// through the metadata client, for reasons that matter at tens of thousands of pods (the LISTs of
// candidate pods are read the same way, in full):
//
//   - one response: an apiserver that streams list encodings (v1.33 and later) serves the whole
//     list from its watch cache in one response; continue pages cost it several times as much
//     per pod (about 3x on v1.37, see bench/);
//   - streaming: items are decoded one at a time as they arrive, so no raw response or page is
//     ever held whole, however many pods there are;
//   - pipelining, when paged: the apiserver writes a list's metadata, with its continue token,
//     before the items, so the next page is requested as soon as that arrives;
//   - managedFields, most of a pod's metadata and unused for bulk pods, are skipped before
//     decoding instead of being decoded and dropped; pods a LIST of candidates returns that no
//     check asked for are skipped undecoded.
//
// A server that answers in JSON instead is read through the generic decoder.

// metadataListAccept asks for a metadata-only list, in protobuf when the server can.
const metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
	"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// fullListAccept asks for full objects, in protobuf when the server can.
const fullListAccept = "application/vnd.kubernetes.protobuf,application/json"

// protoMagic starts every protobuf-encoded Kubernetes object (runtime.Unknown follows).
const protoMagic = "k8s\x00"

// Field numbers of the protobuf messages read here (k8s.io/apimachinery generated.proto).
const (
	fieldUnknownRaw         = 2  // runtime.Unknown.raw
	fieldListMeta           = 1  // PartialObjectMetadataList.metadata, PodList.metadata
	fieldListItems          = 2  // PartialObjectMetadataList.items, PodList.items
	fieldPartialMeta        = 1  // PartialObjectMetadata.metadata
	fieldPodMetadata        = 1  // Pod.metadata
	fieldObjectUID          = 5  // ObjectMeta.uid
	fieldObjectAnnotation   = 12 // ObjectMeta.annotations, one map entry per field
	fieldMapEntryKey        = 1  // the key of a map entry
	fieldObjectManagedField = 17 // ObjectMeta.managedFields
)

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// streamsLists reports whether an apiserver of this version streams the encoding of list
// responses (StreamingCollectionEncodingToProtobuf, on by default since v1.33), so an unpaginated
// list costs it no memory for the whole response.
func streamsLists(major, minor string) bool {
	maj, err1 := strconv.Atoi(major)
	mnr, err2 := strconv.Atoi(strings.TrimRight(minor, "+"))
	return err1 == nil && err2 == nil && (maj > 1 || maj == 1 && mnr >= 33)
}

// maxItemBytes bounds one pod's metadata; anything larger is not a pod the apiserver would store.
const maxItemBytes = 16 << 20

// podPage is the response of one page request.
type podPage struct {
	body io.ReadCloser
	err  error
}

// listDecoder reads one list response and calls listMeta as soon as it has the list's metadata.
type listDecoder func(body io.Reader, listMeta func(*metav1.ListMeta)) error

// streamPods lists the pods of namespace ns ("" for all) with opts, asking for accept, in pages of
// limit pods (0: one response), and hands each response to decode as it arrives. The next page is
// requested as soon as decode reports the continue token. A resourceVersion in opts applies to the
// first page; the others carry theirs in the continue token.
func (col *collector) streamPods(ctx context.Context, ns string, opts metav1.ListOptions, limit int64, accept string, decode listDecoder) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts.Limit = limit
	open := func(cont string) <-chan podPage {
		ch := make(chan podPage, 1)
		o := opts
		if cont != "" {
			o.Continue, o.ResourceVersion, o.ResourceVersionMatch = cont, "", ""
		}
		go func() {
			body, err := col.c.Kube.CoreV1().RESTClient().Get().
				Namespace(ns).Resource("pods").
				VersionedParams(&o, scheme.ParameterCodec).
				SetHeader("Accept", accept).
				Stream(ctx)
			ch <- podPage{body: body, err: err}
		}()
		return ch
	}
	// A page requested but not read when an error stops the list is closed here.
	var pending <-chan podPage
	defer func() {
		if pending != nil {
			cancel()
			if p := <-pending; p.body != nil {
				p.body.Close()
			}
		}
	}()
	pending = open("")
	for pending != nil {
		p := <-pending
		pending = nil
		if p.err != nil {
			return p.err
		}
		err := decode(p.body, func(lm *metav1.ListMeta) {
			if lm.Continue != "" && pending == nil {
				pending = open(lm.Continue)
			}
		})
		p.body.Close()
		if err != nil {
			return fmt.Errorf("decode pod list: %w", err)
		}
	}
	return nil
}

// streamPodMeta lists the pods of namespace ns ("" for all) metadata-only, in pages of limit
// pods (0: one response), and calls list with the first page's list metadata, then meta with each
// pod's metadata (without managedFields) in order. meta must not keep the ObjectMeta pointer past
// the call; it may keep what it points to.
func (col *collector) streamPodMeta(ctx context.Context, ns string, opts metav1.ListOptions, limit int64,
	list func(*metav1.ListMeta), meta func(*metav1.ObjectMeta)) error {
	var item metav1.ObjectMeta
	first := true
	annotations := map[string]bool{}
	for _, a := range col.opts.PodAnnotations {
		annotations[a] = true
	}
	return col.streamPods(ctx, ns, opts, limit, metadataListAccept, func(body io.Reader, listMeta func(*metav1.ListMeta)) error {
		return decodeMetaPage(body, &item, annotations, func(lm *metav1.ListMeta) {
			if first {
				first = false
				list(lm)
			}
			listMeta(lm)
		}, meta)
	})
}

// decodeMetaPage reads one PartialObjectMetadataList response, protobuf or JSON. It calls list
// when the list metadata arrives, and meta for each item, decoded into *item (reused), without
// managedFields and with only the annotations in keep.
func decodeMetaPage(body io.Reader, item *metav1.ObjectMeta, keep map[string]bool, list func(*metav1.ListMeta), meta func(*metav1.ObjectMeta)) error {
	br := bufio.NewReaderSize(body, 64<<10)
	if !isProtobuf(br) {
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
	return decodeProtoList(br, list, func(raw []byte) error {
		m, err := field(raw, fieldPartialMeta)
		if err != nil {
			return err
		}
		*item = metav1.ObjectMeta{}
		m = dropFields(m, func(num uint64, content []byte) bool {
			if num == fieldObjectAnnotation {
				key, err := field(content, fieldMapEntryKey)
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
	if !isProtobuf(br) {
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
	return decodeProtoList(br, list, func(raw []byte) error {
		meta, err := field(raw, fieldPodMetadata)
		if err != nil {
			return err
		}
		uid, err := field(meta, fieldObjectUID)
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

// isProtobuf reports whether a response body is a protobuf-encoded object.
func isProtobuf(br *bufio.Reader) bool {
	head, err := br.Peek(len(protoMagic))
	return err == nil && string(head) == protoMagic
}

// decodeProtoList reads a protobuf list response (the magic, then a runtime.Unknown whose raw
// field holds the list) from br, calling list with the list metadata when it arrives and item
// with each item's encoding (valid only during the call).
func decodeProtoList(br *bufio.Reader, list func(*metav1.ListMeta), item func([]byte) error) error {
	if _, err := br.Discard(len(protoMagic)); err != nil {
		return err
	}
	var buf []byte
	env := &wireReader{br: br, left: math.MaxInt64, outermost: true}
	for {
		num, typ, err := env.tag()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if num != fieldUnknownRaw || typ != wireBytes {
			if err := env.skip(typ); err != nil {
				return err
			}
			continue
		}
		n, err := env.varint()
		if err != nil {
			return err
		}
		lst, err := env.sub(n)
		if err != nil {
			return err
		}
		for {
			num, typ, err := lst.tag()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			switch {
			case num == fieldListMeta && typ == wireBytes:
				if buf, err = lst.message(buf); err != nil {
					return err
				}
				var lm metav1.ListMeta
				if err := lm.Unmarshal(buf); err != nil {
					return fmt.Errorf("list metadata: %w", err)
				}
				list(&lm)
			case num == fieldListItems && typ == wireBytes:
				if buf, err = lst.message(buf); err != nil {
					return err
				}
				if err := item(buf); err != nil {
					return err
				}
			default:
				if err := lst.skip(typ); err != nil {
					return err
				}
			}
		}
		env.left -= int64(n)
	}
}

// wireReader reads protobuf fields from a stream, within a message of left bytes, or to the end
// of the stream when the message is the outermost one (left starts at math.MaxInt64).
type wireReader struct {
	br        *bufio.Reader
	left      int64
	outermost bool
}

// sub returns a reader for the next n bytes, which the caller must read to the end before using
// w again; the caller then subtracts n from w.left.
func (w *wireReader) sub(n uint64) (*wireReader, error) {
	if n > uint64(w.left) {
		return nil, io.ErrUnexpectedEOF
	}
	return &wireReader{br: w.br, left: int64(n)}, nil
}

func (w *wireReader) byte() (byte, error) {
	if w.left <= 0 {
		return 0, io.EOF
	}
	b, err := w.br.ReadByte()
	if err != nil {
		return 0, err
	}
	w.left--
	return b, nil
}

func (w *wireReader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := w.byte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("protobuf varint overflows 64 bits")
}

// tag reads a field's number and wire type; io.EOF at the end of the message.
func (w *wireReader) tag() (num uint64, typ int, err error) {
	if w.left <= 0 {
		return 0, 0, io.EOF
	}
	if _, err := w.br.Peek(1); errors.Is(err, io.EOF) && w.outermost {
		return 0, 0, io.EOF // the end of the outermost message is the end of the stream
	}
	v, err := w.varint()
	if err != nil {
		return 0, 0, err
	}
	return v >> 3, int(v & 7), nil
}

// message reads a length-delimited field's content into buf (grown as needed).
func (w *wireReader) message(buf []byte) ([]byte, error) {
	n, err := w.varint()
	if err != nil {
		return buf, err
	}
	if n > maxItemBytes || n > uint64(w.left) {
		return buf, fmt.Errorf("protobuf field of %d bytes exceeds its message", n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n, max(n, 2*uint64(cap(buf))))
	}
	buf = buf[:n]
	if _, err := io.ReadFull(w.br, buf); err != nil {
		return buf, err
	}
	w.left -= int64(n)
	return buf, nil
}

func (w *wireReader) skip(typ int) error {
	var n uint64
	switch typ {
	case wireVarint:
		_, err := w.varint()
		return err
	case wireFixed64:
		n = 8
	case wireFixed32:
		n = 4
	case wireBytes:
		var err error
		if n, err = w.varint(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unsupported protobuf wire type %d", typ)
	}
	if n > uint64(w.left) {
		return io.ErrUnexpectedEOF
	}
	if _, err := w.br.Discard(int(n)); err != nil {
		return err
	}
	w.left -= int64(n)
	return nil
}

// sliceVarint decodes a varint at the start of b and returns it with its length.
func sliceVarint(b []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * uint(i))
		if b[i] < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, io.ErrUnexpectedEOF
}

// fieldEnd returns the length of the field starting at b (tag included) and its number.
func fieldEnd(b []byte) (num uint64, n int, err error) {
	tag, i, err := sliceVarint(b)
	if err != nil {
		return 0, 0, err
	}
	var size uint64
	switch tag & 7 {
	case wireVarint:
		_, k, err := sliceVarint(b[i:])
		if err != nil {
			return 0, 0, err
		}
		size = uint64(k)
	case wireFixed64:
		size = 8
	case wireFixed32:
		size = 4
	case wireBytes:
		l, k, err := sliceVarint(b[i:])
		if err != nil {
			return 0, 0, err
		}
		i += k
		size = l
	default:
		return 0, 0, fmt.Errorf("unsupported protobuf wire type %d", tag&7)
	}
	if size > uint64(len(b)-i) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return tag >> 3, i + int(size), nil
}

// field returns the content of the first length-delimited field num of message b.
func field(b []byte, num uint64) ([]byte, error) {
	for len(b) > 0 {
		n, end, err := fieldEnd(b)
		if err != nil {
			return nil, err
		}
		if n == num {
			_, i, _ := sliceVarint(b)
			_, k, _ := sliceVarint(b[i:])
			return b[i+k : end], nil
		}
		b = b[end:]
	}
	return nil, nil
}

// dropFields removes from message b, in place, every field for which drop, given the field's number
// and its content (length-delimited fields only; nil for others), returns true, and returns what is
// left. From a malformed field on, the rest is kept as it is, for the decoder to report.
func dropFields(b []byte, drop func(num uint64, content []byte) bool) []byte {
	out := 0
	for in := 0; in < len(b); {
		n, end, err := fieldEnd(b[in:])
		if err != nil {
			return append(b[:out], b[in:]...)
		}
		var content []byte
		if tag, i, _ := sliceVarint(b[in:]); tag&7 == wireBytes {
			_, k, _ := sliceVarint(b[in+i:])
			content = b[in+i+k : in+end]
		}
		if !drop(n, content) {
			out += copy(b[out:], b[in:in+end])
		}
		in += end
	}
	return b[:out]
}
