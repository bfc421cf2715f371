package protolist

import (
	"fmt"
	"io"
)

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

// Field returns the content of the first length-delimited field num of message b (nil when b has
// none).
func Field(b []byte, num uint64) ([]byte, error) {
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

// DropFields removes from message b, in place, every field for which drop, given the field's
// number and its content (length-delimited fields only; nil for others), returns true, and
// returns what is left. From a malformed field on, the rest is kept as it is, for the decoder to
// report.
func DropFields(b []byte, drop func(num uint64, content []byte) bool) []byte {
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
