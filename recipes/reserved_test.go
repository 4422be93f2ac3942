package recipes_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// Every recipe refuses /zookeeper, the servers' own tree, and what is
// under it, also where a namespace puts the path there, with an error
// wrapping framework.ErrInvalidArgument; the servers would take the nodes. A path that
// only begins with the same letters is a path like any other.
func TestRecipesRefuseTheServersTree(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	before, _, err := conn.Children("/zookeeper")
	testutil.Must(t, err)
	c := newClient(t, "")
	inZookeeper := newClient(t, "", framework.WithNamespace("zookeeper"))
	count := must(recipes.NewSharedCount(c, base+"/count", 1)).get(t) // not started: makes nothing
	for _, ctor := range recipeCtors(ctx, count) {
		t.Run(ctor.name, func(t *testing.T) {
			for _, tc := range []struct {
				c    *framework.Client
				path string
				want string
			}{
				{c, "/zookeeper", `invalid path "/zookeeper": a recipe's path must not be under /zookeeper, the servers' own tree`},
				{c, "/zookeeper/locks/x", `invalid path "/zookeeper/locks/x": a recipe's path must not be under /zookeeper`},
				{inZookeeper, "/locks/x", `(in namespace "zookeeper" it is /zookeeper/locks/x)`},
			} {
				err := ctor.make(tc.c, tc.path)
				testutil.ErrorIs(t, err, framework.ErrInvalidArgument, tc.want)
				testutil.ErrorIs(t, err, zk.ErrInvalidPath, tc.want)
			}
			if err := ctor.make(c, base+"/zookeeperx"); errors.Is(err, framework.ErrInvalidArgument) {
				t.Errorf("%s/zookeeperx: %v", base, err)
			}
			if ctor.name == "revoke" {
				return
			}
			if err := ctor.make(c, "/zookeeperx/a"); err != nil {
				t.Errorf("/zookeeperx/a: %v", err)
			}
		})
	}
	after, _, err := conn.Children("/zookeeper")
	testutil.Must(t, err)
	if strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("/zookeeper had %v, has %v", before, after)
	}
}
