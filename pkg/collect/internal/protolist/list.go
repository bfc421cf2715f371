// Package protolist reads protobuf-encoded Kubernetes list responses as they stream in, one item
// at a time, and reads or drops fields of an encoded message without decoding it. It knows the
// envelope every protobuf response has (the magic, then a runtime.Unknown) and the shape every
// list has (metadata, then items); what an item holds is the caller's business.
package protolist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Magic starts every protobuf-encoded Kubernetes object (runtime.Unknown follows).
const Magic = "k8s\x00"

// MaxItemBytes bounds one list item; anything larger is not an object the apiserver would store.
const MaxItemBytes = 16 << 20

// Field numbers of the messages read here (k8s.io/apimachinery generated.proto).
const (
	fieldUnknownRaw = 2 // runtime.Unknown.raw
	fieldListMeta   = 1 // metadata of every list (PartialObjectMetadataList, PodList, ...)
	fieldListItems  = 2 // items of every list
)

// IsProtobuf reports whether a response body is a protobuf-encoded object.
func IsProtobuf(br *bufio.Reader) bool {
	head, err := br.Peek(len(Magic))
	return err == nil && string(head) == Magic
}

// Decode reads a protobuf list response (the magic, then a runtime.Unknown whose raw field holds
// the list) from br, calling list with the list metadata when it arrives and item with each item's
// encoding (valid only during the call). The apiserver writes the metadata before the items, so
// list learns the continue token before the first item is read. A response that ends before its
// list did (the connection broke) is io.ErrUnexpectedEOF, never a shorter list.
func Decode(br *bufio.Reader, list func(*metav1.ListMeta), item func([]byte) error) error {
	err := decodeStream(br, list, item)
	if errors.Is(err, io.EOF) {
		// The end of the stream anywhere but after the list is a truncation.
		return io.ErrUnexpectedEOF
	}
	return err
}

func decodeStream(br *bufio.Reader, list func(*metav1.ListMeta), item func([]byte) error) error {
	if _, err := br.Discard(len(Magic)); err != nil {
		return io.ErrUnexpectedEOF
	}
	var buf []byte
	env := &reader{br: br, left: math.MaxInt64, outermost: true}
	read := false
	for {
		num, typ, err := env.tag()
		if errors.Is(err, io.EOF) {
			if !read {
				return io.ErrUnexpectedEOF
			}
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
		if buf, err = decodeList(lst, buf, list, item); err != nil {
			return err
		}
		env.left -= int64(n)
		read = true
	}
}

// decodeList reads the fields of a list message from r to its end, reusing buf for each field.
func decodeList(r *reader, buf []byte, list func(*metav1.ListMeta), item func([]byte) error) ([]byte, error) {
	for {
		num, typ, err := r.tag()
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		switch {
		case num == fieldListMeta && typ == wireBytes:
			if buf, err = r.message(buf); err != nil {
				return buf, err
			}
			var lm metav1.ListMeta
			if err := lm.Unmarshal(buf); err != nil {
				return buf, fmt.Errorf("list metadata: %w", err)
			}
			list(&lm)
		case num == fieldListItems && typ == wireBytes:
			if buf, err = r.message(buf); err != nil {
				return buf, err
			}
			if err := item(buf); err != nil {
				return buf, err
			}
		default:
			if err := r.skip(typ); err != nil {
				return buf, err
			}
		}
	}
}
