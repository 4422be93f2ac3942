package zkwire

import (
	"encoding/binary"
	"fmt"
)

// badLength is a frame header's length no ZooKeeper frame has; it is
// ErrBadFrame.
type badLength int32

func (n badLength) Error() string {
	return fmt.Sprintf("a frame of %d bytes is no ZooKeeper frame", int32(n))
}

// Is makes a badLength ErrBadFrame for errors.Is.
func (badLength) Is(target error) bool { return target == ErrBadFrame }

// ServerStream follows what a server sends on one connection, piece by
// piece as it is read, without holding it up or copying it: the connect
// response first, then replies and watch events, each a frame. Of the
// connect response it keeps the whole frame; of every later frame, the xid
// its body begins with. The zero value is ready at the start of a stream.
type ServerStream struct {
	hdr    [FrameHeaderLen]byte
	hdrN   int  // bytes of hdr read
	inBody bool // hdr is whole: the body is being read
	rest   int  // bytes of the body still to come
	bodyN  int  // bytes of the body read
	xid    [4]byte
	resp   []byte // the connect response so far, header included
	begun  bool   // the connect response has been read
	bad    error  // the stream is not ZooKeeper frames
}

// Follow reads b, the next piece of the stream. Once the connect response
// is read whole, it calls connected with it (header included; the slice is
// the caller's); for each later frame read whole, replied with its xid (a
// frame too short for one is passed over). Once a header announces a
// length no ZooKeeper frame has, it returns an error wrapping ErrBadFrame,
// then and on every later call, and follows nothing more.
func (s *ServerStream) Follow(b []byte, connected func(frame []byte), replied func(xid int32)) error {
	for len(b) > 0 && s.bad == nil {
		if !s.inBody {
			k := copy(s.hdr[s.hdrN:], b)
			s.hdrN += k
			b = b[k:]
			if s.hdrN < len(s.hdr) {
				break
			}
			size, ok := FrameLen(s.hdr)
			if !ok {
				s.bad = badLength(int32(binary.BigEndian.Uint32(s.hdr[:])))
				break
			}
			s.hdrN, s.inBody, s.rest, s.bodyN = 0, true, size, 0
			if !s.begun {
				s.resp = append(s.resp[:0], s.hdr[:]...)
			}
		}
		k := min(len(b), s.rest)
		if !s.begun {
			s.resp = append(s.resp, b[:k]...)
		} else if s.bodyN < len(s.xid) {
			copy(s.xid[s.bodyN:], b[:k])
		}
		s.bodyN += k
		s.rest -= k
		b = b[k:]
		if s.rest == 0 {
			s.inBody = false
			s.frameRead(connected, replied)
		}
	}
	return s.bad
}

// frameRead hands on the frame just read whole.
func (s *ServerStream) frameRead(connected func(frame []byte), replied func(xid int32)) {
	if !s.begun {
		s.begun = true
		resp := s.resp
		s.resp = nil
		connected(resp)
		return
	}
	if s.bodyN >= len(s.xid) {
		replied(int32(binary.BigEndian.Uint32(s.xid[:])))
	}
}
