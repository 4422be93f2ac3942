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
	os.Exit(testutil.Main(m, &server, testutil.QuickServer(100*time.Millisecond)...))
}
