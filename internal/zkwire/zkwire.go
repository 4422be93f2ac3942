// Package zkwire reads and writes the few parts of ZooKeeper's wire
// protocol that gocurator handles itself, below go-zookeeper: the framing
// (a 4-byte big-endian length, then the packet), the connect handshake,
// closing a session from a connection of its own, and following a server's
// stream of frames as it is read (ServerStream). The framework uses it to
// learn a session's password, to pair replies with requests (its tap) and
// to close a session it gave up; zktest's proxy to follow and fault the
// traffic it forwards; the bench's -timeline to log the frames of a cycle.
package zkwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
)

// OpCloseSession is the opcode of a closeSession request.
const OpCloseSession int32 = -11

// NotificationXid is the xid of a watch notification, which answers no
// request.
const NotificationXid int32 = -1

// Sizes of the protocol.
const (
	MaxFrame         = 64 << 20  // larger lengths are not ZooKeeper frames
	FrameHeaderLen   = 4         // the length prefix
	RequestHeaderLen = 4 + 4     // xid, type
	ReplyHeaderLen   = 4 + 8 + 4 // xid, zxid, err

	connectRequestMin      = 4 + 8 + 4 + 8 + 4 // protocolVersion, lastZxidSeen, timeOut, sessionId, passwd len
	connectResponseMin     = 4 + 4 + 8 + 4     // protocolVersion, timeOut, sessionId, passwd len
	closeSessionRequestXid = 1
)

// ErrBadFrame is returned for bytes that are not a ZooKeeper frame.
var ErrBadFrame = errors.New("zkwire: not a ZooKeeper frame")

// ReadFrame reads one length-prefixed packet and returns it whole, prefix
// included, so it can be forwarded byte for byte.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [FrameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	return ReadFrameBody(r, hdr)
}

// FrameLen returns the length a frame header announces, and whether it is
// plausible for a ZooKeeper frame.
func FrameLen(hdr [FrameHeaderLen]byte) (int, bool) {
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	return int(n), n >= 0 && n <= MaxFrame
}

// Frames yields the whole frames at the start of p, one by one, header
// included, without copying them: a buffer of frames as go-zookeeper
// writes them. A length no ZooKeeper frame has, or a frame cut short, ends
// them.
func Frames(p []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for len(p) >= FrameHeaderLen {
			size, ok := FrameLen([FrameHeaderLen]byte(p))
			if !ok || len(p) < FrameHeaderLen+size {
				return
			}
			if !yield(p[:FrameHeaderLen+size]) {
				return
			}
			p = p[FrameHeaderLen+size:]
		}
	}
}

// ReadFrameBody reads the rest of the frame whose header is hdr and returns
// the frame whole, header included.
func ReadFrameBody(r io.Reader, hdr [FrameHeaderLen]byte) ([]byte, error) {
	n, ok := FrameLen(hdr)
	if !ok {
		return nil, ErrBadFrame
	}
	buf := make([]byte, FrameHeaderLen+n)
	copy(buf, hdr[:])
	if _, err := io.ReadFull(r, buf[FrameHeaderLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// ConnectRequestSession returns the sessionId of a ConnectRequest frame.
func ConnectRequestSession(frame []byte) int64 {
	b := frame[FrameHeaderLen:]
	if len(b) < connectRequestMin {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b[16:24]))
}

// ParseConnectResponse returns timeOut, sessionId and passwd of a
// ConnectResponse frame.
func ParseConnectResponse(frame []byte) (timeout int32, session int64, passwd []byte, ok bool) {
	b := frame[FrameHeaderLen:]
	if len(b) < connectResponseMin {
		return 0, 0, nil, false
	}
	timeout = int32(binary.BigEndian.Uint32(b[4:8]))
	session = int64(binary.BigEndian.Uint64(b[8:16]))
	n := int32(binary.BigEndian.Uint32(b[16:20]))
	if n < 0 || int(n) > len(b)-20 {
		return 0, 0, nil, false
	}
	passwd = append([]byte(nil), b[20:20+n]...)
	return timeout, session, passwd, true
}

// RequestHeader returns xid and opcode of a request frame.
func RequestHeader(frame []byte) (xid, op int32, ok bool) {
	b := frame[FrameHeaderLen:]
	if len(b) < RequestHeaderLen {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(b[0:4])), int32(binary.BigEndian.Uint32(b[4:8])), true
}

// ReplyXid returns the xid of a reply frame.
func ReplyXid(frame []byte) (int32, bool) {
	b := frame[FrameHeaderLen:]
	if len(b) < 4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b[0:4])), true
}

// PutFrame returns body behind its length.
func PutFrame(body []byte) []byte {
	f := make([]byte, FrameHeaderLen+len(body))
	binary.BigEndian.PutUint32(f, uint32(len(body)))
	copy(f[FrameHeaderLen:], body)
	return f
}

// ConnectRequestFrame returns the frame of a ConnectRequest that attaches
// to session (0: a new one) with passwd.
func ConnectRequestFrame(session int64, timeout int32, passwd []byte) []byte {
	b := make([]byte, connectRequestMin+len(passwd)+1)
	binary.BigEndian.PutUint32(b[0:4], 0)  // protocolVersion
	binary.BigEndian.PutUint64(b[4:12], 0) // lastZxidSeen
	binary.BigEndian.PutUint32(b[12:16], uint32(timeout))
	binary.BigEndian.PutUint64(b[16:24], uint64(session))
	binary.BigEndian.PutUint32(b[24:28], uint32(len(passwd)))
	copy(b[28:], passwd)
	b[len(b)-1] = 0 // readOnly = false
	return PutFrame(b)
}

// CloseSession attaches conn, a fresh connection to a server, to session
// with its password, and closes the session there, as a client's Close
// would: the server deletes the session's ephemeral nodes and tells any
// client that later reconnects with it that it expired. It returns nil if
// the server says the session has expired already. conn's deadline bounds
// it; the caller closes conn.
func CloseSession(conn net.Conn, session int64, timeout int32, passwd []byte) error {
	if _, err := conn.Write(ConnectRequestFrame(session, timeout, passwd)); err != nil {
		return fmt.Errorf("close session 0x%x: send connect: %w", session, err)
	}
	f, err := ReadFrame(conn)
	if err != nil {
		return fmt.Errorf("close session 0x%x: read connect response: %w", session, err)
	}
	_, got, _, ok := ParseConnectResponse(f)
	if !ok {
		return fmt.Errorf("close session 0x%x: bad connect response % x", session, f)
	}
	if got == 0 {
		return nil // already expired
	}
	if got != session {
		return fmt.Errorf("close session 0x%x: server attached session 0x%x", session, got)
	}
	req := make([]byte, RequestHeaderLen)
	binary.BigEndian.PutUint32(req[0:4], closeSessionRequestXid)
	op := OpCloseSession
	binary.BigEndian.PutUint32(req[4:8], uint32(op))
	if _, err := conn.Write(PutFrame(req)); err != nil {
		return fmt.Errorf("close session 0x%x: send closeSession: %w", session, err)
	}
	for {
		f, err := ReadFrame(conn)
		if err != nil {
			return fmt.Errorf("close session 0x%x: read closeSession reply: %w", session, err)
		}
		b := f[FrameHeaderLen:]
		if len(b) < ReplyHeaderLen {
			return fmt.Errorf("close session 0x%x: short reply % x", session, f)
		}
		xid := int32(binary.BigEndian.Uint32(b[0:4]))
		if xid != closeSessionRequestXid {
			continue // a watch event or similar for this session
		}
		if code := int32(binary.BigEndian.Uint32(b[12:16])); code != 0 {
			return fmt.Errorf("close session 0x%x: closeSession error code %d", session, code)
		}
		return nil
	}
}
