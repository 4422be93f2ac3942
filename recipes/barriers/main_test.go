package barriers_test

import (
	"os"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// server is the real ZooKeeper the package's tests share. Empty containers
// are reaped every 100 ms, so members meet vanished parents.
var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &server, zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second),
		zktest.WithContainerCheckInterval(100*time.Millisecond)))
}
