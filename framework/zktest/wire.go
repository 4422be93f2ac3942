package zktest

import (
	"fmt"
	"math"
	"net"
	"time"

	"github.com/gocurator/curator/internal/zkwire"
)

// ZooKeeper request opcodes, for LoseNextReply, Requests and WaitRequests.
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
	OpCloseSession          = zkwire.OpCloseSession

	// AnyOpcode makes LoseNextReply match any request that gets a reply
	// (xid >= 0).
	AnyOpcode int32 = math.MinInt32
)

// closeSessionDirect attaches a new connection to session on the server at
// addr, using its password, and closes the session there (see
// zkwire.CloseSession). It returns nil if the server says the session has
// already expired.
func closeSessionDirect(addr string, session int64, timeout int32, passwd []byte, deadline time.Time) error {
	conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("zktest: expire session 0x%x: %w", session, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if err := zkwire.CloseSession(conn, session, timeout, passwd); err != nil {
		return fmt.Errorf("zktest: expire session: %w", err)
	}
	return nil
}
