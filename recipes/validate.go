package recipes

import (
	"context"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/recipeargs"
)

// checkArgs checks what every recipe constructor (and Revoke) is given, as
// every recipe of the module does (recipeargs.Check): a client neither nil
// nor closed, and a path ZooKeeper accepts, other than the root or under
// /zookeeper, short enough for a node under it.
func checkArgs(client *framework.Client, path string) error { return recipeargs.Check(client, path) }

// checkContext refuses a nil context: every call that takes one needs it to
// know when to give up.
func checkContext(ctx context.Context) error { return recipeargs.Context(ctx) }
