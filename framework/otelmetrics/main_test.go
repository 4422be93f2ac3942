package otelmetrics_test

import (
	"os"
	"testing"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// server is the real ZooKeeper the package's tests and its example share.
var server *zktest.Server

func TestMain(m *testing.M) { os.Exit(testutil.Main(m, &server)) }
