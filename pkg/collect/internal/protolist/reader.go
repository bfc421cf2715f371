package protolist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// reader reads protobuf fields from a stream, within a message of left bytes, or to the end of
// the stream when the message is the outermost one (left starts at math.MaxInt64).
type reader struct {
	br        *bufio.Reader
	left      int64
	outermost bool
}

// sub returns a reader for the next n bytes, which the caller must read to the end before using
// r again; the caller then subtracts n from r.left.
func (r *reader) sub(n uint64) (*reader, error) {
	if n > uint64(r.left) {
		return nil, io.ErrUnexpectedEOF
	}
	return &reader{br: r.br, left: int64(n)}, nil
}

func (r *reader) byte() (byte, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	b, err := r.br.ReadByte()
	if err != nil {
		return 0, err
	}
	r.left--
	return b, nil
}

func (r *reader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := r.byte()
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
func (r *reader) tag() (num uint64, typ int, err error) {
	if r.left <= 0 {
		return 0, 0, io.EOF
	}
	if _, err := r.br.Peek(1); errors.Is(err, io.EOF) && r.outermost {
		return 0, 0, io.EOF // the end of the outermost message is the end of the stream
	}
	v, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	return v >> 3, int(v & 7), nil
}

// message reads a length-delimited field's content into buf (grown as needed).
func (r *reader) message(buf []byte) ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return buf, err
	}
	if n > MaxItemBytes || n > uint64(r.left) {
		return buf, fmt.Errorf("protobuf field of %d bytes exceeds its message", n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n, max(n, 2*uint64(cap(buf))))
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return buf, err
	}
	r.left -= int64(n)
	return buf, nil
}

func (r *reader) skip(typ int) error {
	var n uint64
	switch typ {
	case wireVarint:
		_, err := r.varint()
		return err
	case wireFixed64:
		n = 8
	case wireFixed32:
		n = 4
	case wireBytes:
		var err error
		if n, err = r.varint(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unsupported protobuf wire type %d", typ)
	}
	if n > uint64(r.left) {
		return io.ErrUnexpectedEOF
	}
	if _, err := r.br.Discard(int(n)); err != nil {
		return err
	}
	r.left -= int64(n)
	return nil
}
