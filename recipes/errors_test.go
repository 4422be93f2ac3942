package recipes_test

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// Error texts as a user reads them: one "gocurator: " each, every layer
// adding only what it knows, and the sentinels they wrap.
func TestErrorTexts(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	offline, err := framework.New("127.0.0.1:1", retry.NewNTimes(0, 0), framework.WithConnectionTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer offline.Close()
	huge := base + "/" + strings.Repeat("x", 1100*1000)
	count := must(recipes.NewSharedCount(c, base+"/count", 1)).get(t)
	if err := count.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer count.Close()

	for _, tc := range []struct {
		name string
		err  error
		is   []error
		text string // the whole message, a regular expression
	}{
		{"acquire without a server", mustMutex(t, offline, "/locks/x").NewHandle().Acquire(ctx),
			[]error{zk.ErrNoServer},
			`gocurator: acquire /locks/x: create /locks/x/lock-: no server answered for \d+(\.\d+)?m?s: 127\.0\.0\.1:1 \(connection refused\)`},
		{"release of nothing", mustMutex(t, c, base).NewHandle().Release(ctx), []error{recipes.ErrNotHeld},
			regexp.QuoteMeta("gocurator: release " + base + ": not held by this handle")},
		{"a path too long for the servers", errOf(recipes.NewInterProcessMutex(c, huge)), []error{framework.ErrInvalidArgument, framework.ErrInvalidArgument},
			regexp.QuoteMeta("gocurator: invalid argument: path of " + strconv.Itoa(len(huge)) + " bytes is too long: the servers take requests of at most 1048575 bytes (jute.maxbuffer), and a recipe node's name, data and ACL need 1024 of them")},
		{"a shared count started twice", count.Start(ctx), []error{recipes.ErrInvalidState},
			regexp.QuoteMeta("gocurator: shared count " + base + "/count: invalid state: started twice or after Close")},
		//lint:ignore SA1012 a nil context is the bad input under test
		{"a nil context", mustMutex(t, c, base).NewHandle().Acquire(nil),
			[]error{framework.ErrInvalidArgument, framework.ErrInvalidArgument},
			regexp.QuoteMeta("gocurator: acquire " + base + ": invalid argument: nil context")},
		{"a bad path", errOf(recipes.NewInterProcessMutex(c, "locks/x")), []error{framework.ErrInvalidArgument, zk.ErrInvalidPath},
			regexp.QuoteMeta(`gocurator: invalid path "locks/x": path must start with /`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range tc.is {
				testutil.ErrorIs(t, tc.err, target)
			}
			if !regexp.MustCompile("^" + tc.text + "$").MatchString(tc.err.Error()) {
				t.Errorf("error text\n got %q\nwant %q", tc.err.Error(), tc.text)
			}
		})
	}
	if errors.Is(count.Start(ctx), framework.ErrInvalidArgument) {
		t.Error("a second Start is a state error, not a bad argument")
	}
	if framework.ErrInvalidArgument != framework.ErrInvalidArgument {
		t.Error("two invalid-argument sentinels")
	}
}
