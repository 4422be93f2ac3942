package zkwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// serverStream is a connect response with session 0x1234 and a password,
// then a reply (xid 7), a watch event (xid -1), a frame with an empty
// body, a frame too short for an xid, and a reply (xid 8) with a long body.
func serverStream() (stream []byte, connect []byte) {
	body := make([]byte, connectResponseMin+3)
	binary.BigEndian.PutUint32(body[4:8], 4000)
	binary.BigEndian.PutUint64(body[8:16], 0x1234)
	binary.BigEndian.PutUint32(body[16:20], 3)
	copy(body[20:], "pwd")
	connect = PutFrame(body)
	reply := func(xid int32, n int) []byte {
		b := make([]byte, ReplyHeaderLen+n)
		binary.BigEndian.PutUint32(b, uint32(xid))
		return PutFrame(b)
	}
	stream = slices.Concat(connect, reply(7, 0), reply(-1, 20), PutFrame(nil), PutFrame([]byte{1, 2}), reply(8, 3000))
	return stream, connect
}

// However the stream is cut into reads, ServerStream hands on the connect
// response whole and the xid of every later frame that has one, in order,
// each once its frame is read whole.
func TestServerStreamFollowsAnyCut(t *testing.T) {
	stream, connect := serverStream()
	for _, size := range []int{1, 2, 3, 4, 5, 7, 13, 64, 1000, len(stream)} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			var s ServerStream
			var got []int32
			var resp []byte
			read := 0
			for b := stream; len(b) > 0; {
				k := min(size, len(b))
				err := s.Follow(b[:k], func(f []byte) { resp = f }, func(xid int32) {
					got = append(got, xid)
					if xid == 8 && read+k != len(stream) {
						t.Errorf("xid 8 handed on before its frame was read whole")
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				read += k
				b = b[k:]
			}
			if !bytes.Equal(resp, connect) {
				t.Errorf("connect response %x, want %x", resp, connect)
			}
			if timeout, id, passwd, ok := ParseConnectResponse(resp); !ok || timeout != 4000 || id != 0x1234 || string(passwd) != "pwd" {
				t.Errorf("connect response parsed as %d, %x, %q, %v", timeout, id, passwd, ok)
			}
			if want := []int32{7, -1, 8}; !slices.Equal(got, want) {
				t.Errorf("xids %v, want %v", got, want)
			}
		})
	}
}

// A header announcing a length no ZooKeeper frame has ends the following,
// with an error that says the length and is ErrBadFrame, now and later.
func TestServerStreamStopsAtABadLength(t *testing.T) {
	stream, _ := serverStream()
	bad := binary.BigEndian.AppendUint32(nil, uint32(MaxFrame+1))
	var s ServerStream
	replies := 0
	err := s.Follow(slices.Concat(stream[:len(stream)-1], stream[len(stream)-1:], bad, stream), func([]byte) {}, func(int32) { replies++ })
	if !errors.Is(err, ErrBadFrame) || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprint(MaxFrame+1))) {
		t.Fatalf("Follow = %v, want ErrBadFrame naming %d", err, MaxFrame+1)
	}
	if err := s.Follow(stream, func([]byte) {}, func(int32) { replies++ }); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("Follow after the bad length = %v, want ErrBadFrame still", err)
	}
	if replies != 3 {
		t.Fatalf("%d replies handed on, want the 3 before the bad length", replies)
	}
}

// Frames yields each whole frame of a buffer in place, and stops at a
// frame cut short or a length no frame has.
func TestFrames(t *testing.T) {
	a, b := PutFrame([]byte{1, 2, 3}), PutFrame(nil)
	bad := binary.BigEndian.AppendUint32(nil, uint32(MaxFrame+1))
	for _, c := range []struct {
		name string
		p    []byte
		want [][]byte
	}{
		{"two", slices.Concat(a, b), [][]byte{a, b}},
		{"cut short", slices.Concat(a, b[:2]), [][]byte{a}},
		{"a body cut short", slices.Concat(b, a[:5]), [][]byte{b}},
		{"a bad length", slices.Concat(a, bad, b), [][]byte{a}},
		{"empty", nil, nil},
	} {
		var got [][]byte
		for f := range Frames(c.p) {
			got = append(got, f)
			if &f[0] != &c.p[len(slices.Concat(got[:len(got)-1]...))] {
				t.Errorf("%s: frame %d copied", c.name, len(got))
			}
		}
		if !slices.EqualFunc(got, c.want, bytes.Equal) {
			t.Errorf("%s: frames %x, want %x", c.name, got, c.want)
		}
	}
}
