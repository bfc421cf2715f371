package protolist

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// encoded is a list as the apiserver sends it in protobuf: the magic, then a runtime.Unknown
// whose fields other than raw (type, content type) the decoder skips.
func encoded(t *testing.T, l *metav1.PartialObjectMetadataList) []byte {
	t.Helper()
	raw, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	typeMeta := appendBytes(appendTag(nil, 1, wireBytes), []byte("\x0a\x07meta/v1"))
	b := appendBytes(appendTag([]byte(Magic), 1, wireBytes), typeMeta)
	b = appendBytes(appendTag(b, fieldUnknownRaw, wireBytes), raw)
	return appendBytes(appendTag(b, 4, wireBytes), []byte("application/vnd.kubernetes.protobuf"))
}

func list(n int) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	for i := range n {
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("p-%d", i), Namespace: "shop", UID: types.UID(fmt.Sprintf("uid-%d", i)),
			Labels: map[string]string{"app": "web"}}})
	}
	return l
}

// decode runs Decode over body and returns what it reported, in order.
func decode(body []byte, item func([]byte) error) (calls []string, err error) {
	br := bufio.NewReader(bytes.NewReader(body))
	if !IsProtobuf(br) {
		return nil, errors.New("not protobuf")
	}
	err = Decode(br, func(lm *metav1.ListMeta) {
		calls = append(calls, "list rv="+lm.ResourceVersion+" continue="+lm.Continue)
	}, func(raw []byte) error {
		var m metav1.PartialObjectMetadata
		if err := m.Unmarshal(raw); err != nil {
			return err
		}
		calls = append(calls, "item "+m.Name)
		if item != nil {
			return item(raw)
		}
		return nil
	})
	return calls, err
}

func TestDecodeReportsListMetadataBeforeItems(t *testing.T) {
	calls, err := decode(encoded(t, list(3)), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "list rv=42 continue=next; item p-0; item p-1; item p-2"
	if got := strings.Join(calls, "; "); got != want {
		t.Errorf("calls = %s, want %s", got, want)
	}
}

func TestDecodeEmptyList(t *testing.T) {
	calls, err := decode(encoded(t, &metav1.PartialObjectMetadataList{}), nil)
	if err != nil || len(calls) != 1 {
		t.Errorf("calls = %v, err = %v; want only the list metadata", calls, err)
	}
}

func TestDecodeStopsAtTheFirstItemError(t *testing.T) {
	stop := errors.New("stop")
	calls, err := decode(encoded(t, list(3)), func([]byte) error { return stop })
	if !errors.Is(err, stop) || len(calls) != 2 {
		t.Errorf("calls = %v, err = %v; want the error of the first item", calls, err)
	}
}

func TestDecodeRejectsTruncatedStreams(t *testing.T) {
	pb := encoded(t, list(3))
	// A cut anywhere, right after the magic too, is a body cut short (retried), never a shorter list.
	for _, cut := range []int{len(pb) - 1, len(pb) / 2, len(Magic) + 3, len(Magic)} {
		if calls, err := decode(pb[:cut], nil); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d of %d: err %v (%v), want io.ErrUnexpectedEOF", cut, len(pb), err, calls)
		}
	}
}

func TestDecodeRejectsOversizedItems(t *testing.T) {
	// An envelope whose raw field claims a list holding one item larger than MaxItemBytes.
	var b []byte
	b = append(b, Magic...)
	b = appendTag(b, fieldUnknownRaw, wireBytes)
	b = appendVarint(b, MaxItemBytes+16)
	b = appendTag(b, fieldListItems, wireBytes)
	b = appendVarint(b, MaxItemBytes+1)
	if _, err := decode(b, nil); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("err = %v, want the item refused", err)
	}
}

func TestDecodeRejectsVarintOverflow(t *testing.T) {
	b := append([]byte(Magic), bytes.Repeat([]byte{0xff}, 11)...)
	if _, err := decode(b, nil); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("err = %v, want an overflow", err)
	}
}

func TestIsProtobuf(t *testing.T) {
	for body, want := range map[string]bool{Magic + "\x0a": true, `{"kind":"List"}`: false, "k8s": false, "": false} {
		if got := IsProtobuf(bufio.NewReader(strings.NewReader(body))); got != want {
			t.Errorf("IsProtobuf(%q) = %v, want %v", body, got, want)
		}
	}
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendBytes(b, content []byte) []byte {
	return append(appendVarint(b, uint64(len(content))), content...)
}

func appendTag(b []byte, num uint64, typ int) []byte { return appendVarint(b, num<<3|uint64(typ)) }
