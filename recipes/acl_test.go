package recipes_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// The digest identity that owns the locks of TestLockNodesWithOwnerOnlyACL.
const (
	aclUser     = "owner"
	aclPassword = "s3cret"
)

// ownerOnlyClient connects with the owner's credentials and an ACL provider
// that gives acl to lock and everything below it; the nodes above stay
// open, for other tests.
func ownerOnlyClient(t *testing.T, lock string, acl []zk.ACL) *framework.Client {
	return newClient(t, "", framework.WithAuth("digest", []byte(aclUser+":"+aclPassword)),
		framework.WithACLProvider(framework.ACLProviderFunc(func(path string) []zk.ACL {
			if path == lock || strings.HasPrefix(path, lock+"/") {
				return acl
			}
			return framework.OpenACL
		})))
}

// Lock nodes made with a creator-only ACL (CREATOR_ALL_ACL, or the owner's
// digest ACL): a client without the owner's credentials, or with a wrong
// password, can neither delete the holder's node, nor revoke it, nor queue
// for the lock (each an error unwrapping to zk.ErrNoAuth, leaving the tree
// as it was); the owner revokes and releases.
func TestLockNodesWithOwnerOnlyACL(t *testing.T) {
	for _, tc := range []struct {
		name string
		acl  []zk.ACL
	}{
		{"creator", zk.AuthACL(zk.PermAll)},
		{"digest", zk.DigestACL(zk.PermAll, aclUser, aclPassword)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			ctx := testutil.Context(t)
			base := testutil.Path(t)
			lock := base + "/lock"
			// The owner's identity may read and delete what the ACL hides.
			admin := testutil.CleanupTreeAs(t, server.Addr(), base, aclUser+":"+aclPassword)

			h := mustMutex(t, ownerOnlyClient(t, lock, tc.acl), lock).NewHandle()
			revoked := make(chan struct{}, 1)
			h.MakeRevocable(func() { revoked <- struct{}{} })
			if err := h.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			node := h.LockPath()
			want := zk.DigestACL(zk.PermAll, aclUser, aclPassword) // what the server makes of either ACL
			for _, p := range []string{lock, node} {
				if acl, _, err := admin.GetACL(p); err != nil || !reflect.DeepEqual(acl, want) {
					t.Fatalf("ACL of %s = %v, %v; want %v", p, acl, err, want)
				}
			}

			for _, s := range []struct {
				name string
				opts []framework.Option
			}{
				{"no credentials", nil},
				{"wrong password", []framework.Option{framework.WithAuth("digest", []byte(aclUser+":wrong"))}},
			} {
				stranger := newClient(t, "", s.opts...)
				for what, err := range map[string]error{
					"delete": stranger.Delete(ctx, node),
					"revoke": recipes.Revoke(ctx, stranger, node),
					"queue":  mustMutex(t, stranger, lock).NewHandle().TryAcquire(ctx),
				} {
					if !errors.Is(err, zk.ErrNoAuth) {
						t.Errorf("%s: %s = %v, want ErrNoAuth", s.name, what, err)
					}
				}
				if kids, _, err := admin.Children(lock); err != nil || len(kids) != 1 {
					t.Fatalf("%s: lock children %v, %v; want the holder's node alone", s.name, kids, err)
				}
				if data, _, err := admin.Get(node); err != nil || len(data) != 0 {
					t.Fatalf("%s: holder's node data %q, %v; want it empty", s.name, data, err)
				}
			}
			select {
			case <-revoked:
				t.Fatal("a stranger's revocation reached the holder")
			default:
			}

			if err := recipes.Revoke(ctx, ownerOnlyClient(t, lock, tc.acl), node); err != nil {
				t.Fatalf("the owner's revocation: %v", err)
			}
			select {
			case <-revoked:
			case <-ctx.Done():
				t.Fatal("the holder did not hear the owner's revocation")
			}
			if err := h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if ok, _, err := admin.Exists(node); err != nil || ok {
				t.Fatalf("the node is still there after release (%v)", err)
			}
		})
	}
}
