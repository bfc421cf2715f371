package collect

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// streamsLists reports whether an apiserver of this version streams the encoding of list
// responses (StreamingCollectionEncodingToProtobuf, on by default since v1.33), so an unpaginated
// list costs it no memory for the whole response.
func streamsLists(major, minor string) bool {
	maj, err1 := strconv.Atoi(major)
	mnr, err2 := strconv.Atoi(strings.TrimRight(minor, "+"))
	return err1 == nil && err2 == nil && (maj > 1 || maj == 1 && mnr >= 33)
}

// podPage is the response of one page request.
type podPage struct {
	body io.ReadCloser
	err  error
}

// pageRequest is a page requested and not read yet; cancel abandons it.
type pageRequest struct {
	answer <-chan podPage
	cancel context.CancelFunc
}

// listDecoder reads one list response and calls listMeta as soon as it has the list's metadata.
// It hands on the items after the first skip (a page read again after it broke) and returns how
// many items it read, skipped ones included.
type listDecoder func(body io.Reader, listMeta func(*metav1.ListMeta), skip int) (int, error)

// streamPods lists the pods of namespace ns ("" for all) with opts, asking for accept, in pages of
// limit pods (0: one response), and hands each response to decode as it arrives. The next page is
// requested as soon as decode reports the continue token. A resourceVersion in opts applies to the
// first page; the others carry theirs in the continue token.
//
// A page that fails transiently (an error answer, or a body cut short) is asked for again: a later
// page with the same continue token, which the apiserver serves from the same snapshot, so the
// items already handed on are skipped; the first page, an unpaged list, or a page whose token
// expired (410) start the list over, after restart forgets what was handed on.
func (col *collector) streamPods(ctx context.Context, ns string, opts metav1.ListOptions, limit int64, accept string, decode listDecoder, restart func()) error {
	opts.Limit = limit
	open := func(cont string) *pageRequest {
		ch := make(chan podPage, 1)
		o := opts
		if cont != "" {
			o.Continue, o.ResourceVersion, o.ResourceVersionMatch = cont, "", ""
		}
		rctx, cancel := context.WithCancel(ctx)
		go func() {
			body, err := col.c.Kube.CoreV1().RESTClient().Get().
				Namespace(ns).Resource("pods").
				VersionedParams(&o, scheme.ParameterCodec).
				SetHeader("Accept", accept).
				Stream(rctx)
			ch <- podPage{body: body, err: err}
		}()
		return &pageRequest{answer: ch, cancel: cancel}
	}
	// A page requested but not read when an error stops the list is abandoned here.
	var pending *pageRequest
	drop := func() {
		if pending != nil {
			pending.cancel()
			if p := <-pending.answer; p.body != nil {
				p.body.Close()
			}
			pending = nil
		}
	}
	defer drop()
	tries := col.retry.Start()
	var (
		cont     string // the continue token of the page being read; "" for the first
		skip     int    // the items of that page already handed on
		restarts int
	)
	pending = open("")
	for pending != nil {
		req := pending
		p := <-req.answer
		pending = nil
		next, n, err := "", 0, p.err
		if err == nil {
			n, err = decode(p.body, func(lm *metav1.ListMeta) {
				if lm.Continue != "" && pending == nil {
					next = lm.Continue
					pending = open(next)
				}
			}, skip)
			p.body.Close()
			if err != nil {
				err = fmt.Errorf("decode pod list: %w", err)
			}
		}
		req.cancel()
		if err == nil {
			cont, skip = next, 0
			continue
		}
		drop()
		switch {
		case cont != "" && expired(err) && restarts < maxRestarts:
			restarts++
			cont, skip = "", 0
			restart()
		case !tries.Again(ctx, err):
			return tries.Err(err)
		case cont == "" || limit == 0:
			skip = 0
			restart()
		default:
			skip = max(skip, n)
		}
		pending = open(cont)
	}
	return nil
}

// streamPodMeta lists the pods of namespace ns ("" for all) metadata-only, in pages of limit
// pods (0: one response), and calls list with the first page's list metadata, then meta with each
// pod's metadata (without managedFields) in order, each once; restart is called when the list
// starts over (after a fault) and must forget every pod meta was given. meta must not keep the ObjectMeta pointer past
// the call; it may keep what it points to.
func (col *collector) streamPodMeta(ctx context.Context, ns string, opts metav1.ListOptions, limit int64,
	list func(*metav1.ListMeta), meta func(*metav1.ObjectMeta), restart func()) error {
	var item metav1.ObjectMeta
	first := true
	annotations := map[string]bool{}
	for _, a := range col.opts.PodAnnotations {
		annotations[a] = true
	}
	return col.streamPods(ctx, ns, opts, limit, metadataListAccept, func(body io.Reader, listMeta func(*metav1.ListMeta), skip int) (int, error) {
		n := 0
		err := decodeMetaPage(body, &item, annotations, func(lm *metav1.ListMeta) {
			if first {
				first = false
				list(lm)
			}
			listMeta(lm)
		}, func(m *metav1.ObjectMeta) {
			if n++; n > skip {
				meta(m)
			}
		})
		return n, err
	}, func() {
		first = true
		restart()
	})
}
