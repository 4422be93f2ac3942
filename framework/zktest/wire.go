package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"
)

// ZooKeeper request opcodes, for LoseNextReply.
const (
	OpNotification    int32 = 0
	OpCreate          int32 = 1
	OpDelete          int32 = 2
	OpExists          int32 = 3
	OpGetData         int32 = 4
	OpSetData         int32 = 5
	OpGetACL          int32 = 6
	OpSetACL          int32 = 7
	OpGetChildren     int32 = 8
	OpSync            int32 = 9
	OpPing            int32 = 11
	OpGetChildren2    int32 = 12
	OpCheck           int32 = 13
	OpMulti           int32 = 14
	OpCreate2         int32 = 15
	OpReconfig        int32 = 16
	OpCreateContainer int32 = 19
	OpDeleteContainer int32 = 20
	OpCreateTTL       int32 = 21
	OpMultiRead       int32 = 22
	OpSetAuth         int32 = 100
	OpSetWatches      int32 = 101
	OpGetEphemerals   int32 = 103
	OpSetWatches2     int32 = 105
	OpAddWatch        int32 = 106
	OpCreateSession   int32 = -10
	OpCloseSession    int32 = -11

	// AnyOpcode makes LoseNextReply match any request that gets a reply
	// (xid >= 0).
	AnyOpcode int32 = math.MinInt32
)

const (
	maxFrame               = 64 << 20          // larger lengths are not ZooKeeper frames
	frameHeaderLen         = 4                 // the length prefix
	connectRequestMin      = 4 + 8 + 4 + 8 + 4 // protocolVersion, lastZxidSeen, timeOut, sessionId, passwd len
	connectResponseMin     = 4 + 4 + 8 + 4     // protocolVersion, timeOut, sessionId, passwd len
	requestHeaderLen       = 4 + 4             // xid, type
	replyHeaderLen         = 4 + 8 + 4         // xid, zxid, err
	closeSessionRequestXid = 1
)

var errBadFrame = errors.New("zktest: not a ZooKeeper frame")

// readFrame reads one length-prefixed packet and returns it whole, prefix
// included, so it can be forwarded byte for byte.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	return readFrameBody(r, hdr)
}

func frameLen(hdr [frameHeaderLen]byte) (int, bool) {
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	return int(n), n >= 0 && n <= maxFrame
}

func readFrameBody(r io.Reader, hdr [frameHeaderLen]byte) ([]byte, error) {
	n, ok := frameLen(hdr)
	if !ok {
		return nil, errBadFrame
	}
	buf := make([]byte, frameHeaderLen+n)
	copy(buf, hdr[:])
	if _, err := io.ReadFull(r, buf[frameHeaderLen:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// connectRequestSession returns the sessionId of a ConnectRequest frame.
func connectRequestSession(frame []byte) int64 {
	b := frame[frameHeaderLen:]
	if len(b) < connectRequestMin {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b[16:24]))
}

// parseConnectResponse returns timeOut, sessionId and passwd of a
// ConnectResponse frame.
func parseConnectResponse(frame []byte) (timeout int32, session int64, passwd []byte, ok bool) {
	b := frame[frameHeaderLen:]
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

// requestHeader returns xid and opcode of a request frame.
func requestHeader(frame []byte) (xid, op int32, ok bool) {
	b := frame[frameHeaderLen:]
	if len(b) < requestHeaderLen {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(b[0:4])), int32(binary.BigEndian.Uint32(b[4:8])), true
}

// replyXid returns the xid of a reply frame.
func replyXid(frame []byte) (int32, bool) {
	b := frame[frameHeaderLen:]
	if len(b) < 4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b[0:4])), true
}

func putFrame(body []byte) []byte {
	f := make([]byte, frameHeaderLen+len(body))
	binary.BigEndian.PutUint32(f, uint32(len(body)))
	copy(f[frameHeaderLen:], body)
	return f
}

func connectRequestFrame(session int64, timeout int32, passwd []byte) []byte {
	b := make([]byte, connectRequestMin+len(passwd)+1)
	binary.BigEndian.PutUint32(b[0:4], 0)  // protocolVersion
	binary.BigEndian.PutUint64(b[4:12], 0) // lastZxidSeen
	binary.BigEndian.PutUint32(b[12:16], uint32(timeout))
	binary.BigEndian.PutUint64(b[16:24], uint64(session))
	binary.BigEndian.PutUint32(b[24:28], uint32(len(passwd)))
	copy(b[28:], passwd)
	b[len(b)-1] = 0 // readOnly = false
	return putFrame(b)
}

// closeSessionDirect attaches a new connection to session on the server at
// addr, using its password, and closes the session there, as a client's
// Close would: the server deletes the session's ephemeral nodes and tells any
// client that later reconnects with it that it expired. It returns nil if the
// server says the session has already expired.
func closeSessionDirect(addr string, session int64, timeout int32, passwd []byte, deadline time.Time) error {
	conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: %w", session, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Write(connectRequestFrame(session, timeout, passwd)); err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: send connect: %w", session, err)
	}
	f, err := readFrame(conn)
	if err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: read connect response: %w", session, err)
	}
	_, got, _, ok := parseConnectResponse(f)
	if !ok {
		return fmt.Errorf("zktest: expire session 0x%x: bad connect response % x", session, f)
	}
	if got == 0 {
		return nil // already expired
	}
	if got != session {
		return fmt.Errorf("zktest: expire session 0x%x: server attached session 0x%x", session, got)
	}
	req := make([]byte, requestHeaderLen)
	binary.BigEndian.PutUint32(req[0:4], closeSessionRequestXid)
	op := OpCloseSession
	binary.BigEndian.PutUint32(req[4:8], uint32(op))
	if _, err := conn.Write(putFrame(req)); err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: send closeSession: %w", session, err)
	}
	for {
		f, err := readFrame(conn)
		if err != nil {
			return fmt.Errorf("zktest: expire session 0x%x: read closeSession reply: %w", session, err)
		}
		b := f[frameHeaderLen:]
		if len(b) < replyHeaderLen {
			return fmt.Errorf("zktest: expire session 0x%x: short reply % x", session, f)
		}
		xid := int32(binary.BigEndian.Uint32(b[0:4]))
		if xid != closeSessionRequestXid {
			continue // a watch event or similar for this session
		}
		if code := int32(binary.BigEndian.Uint32(b[12:16])); code != 0 {
			return fmt.Errorf("zktest: expire session 0x%x: closeSession error code %d", session, code)
		}
		return nil
	}
}
