package zkconn

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/gocurator/curator/internal/zkwire"
)

// The connect request is no request: it has no xid, and its body is not a
// create's, even where its bytes read as one. A reconnect's connect
// request whose last zxid is 0x1_00000004 and whose timeout spells "/abc"
// reads, as a request header, as a create (opcode 1) of "/abc": the hook
// waiting for a create of "/abc" must not hear of it.
func TestTapSkipsTheConnectRequest(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		io.Copy(io.Discard, server)
	}()
	defer func() {
		client.Close()
		<-drained
	}()
	c := &Conn{}
	heard := make(chan struct{}, 1)
	c.OnWritten("/abc", hookFunc(func(*Conn) {
		select {
		case heard <- struct{}{}:
		default:
		}
	}))
	tp := &tap{Conn: client, c: c}

	connect := zkwire.ConnectRequestFrame(0, 0x2f616263, make([]byte, 16)) // timeout: "/abc"
	binary.BigEndian.PutUint64(connect[zkwire.FrameHeaderLen+4:], 1<<32|4)
	if xid, op, _ := zkwire.RequestHeader(connect); xid != 0 || op != opCreate {
		t.Fatalf("the crafted connect request reads as xid %d, op %d; want a create", xid, op)
	}
	if _, err := tp.Write(connect); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
		t.Fatal("the hook of a create heard of the connect request")
	default:
	}
	tp.mu.Lock()
	pending := append([]sent(nil), tp.pending...)
	tp.mu.Unlock()
	if len(pending) != 1 || pending[0].xid != handshakeXid {
		t.Fatalf("written: %+v, want the connect request alone", pending)
	}
}
