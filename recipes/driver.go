package recipes

import (
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// The recipes' rules, as the acquire engine's drivers (acquire.Driver,
// Curator's LockInternalsDriver): how children sort, and whether our node
// holds or which node to wait on. Each applies internal/locktree's rules
// (the one owner of the tree format). The standard drivers are here; the
// read half's readDriver is in read_write_lock.go, the semaphore's
// counting leaseDriver in semaphore.go.
//
// The hand-off (acquire.HandoffDriver: HandsOff says, of the listing in
// which ourName waits on watch, whether the deletion of watch alone makes
// ourName the holder, so that the waiter holds the moment that node is
// deleted, without listing again: the round trip Curator pays at every
// hand-off). Why it is safe: sequence numbers only grow, so no sequential
// node can appear ahead of ours after we listed. The only lock node that
// can is non-sequential: the read node of a read-write downgrade, which
// takes the key of the downgrader's __WRIT__ node. So the hand-off is
// allowed only when the deleted node was the one node that could keep us
// from holding and cannot be replaced by a node that would: a mutex (or a
// writer) whose only node ahead is not a write node; a reader whose only
// writer ahead is the one it watches (a downgrade read node does not block
// readers). A foreign non-sequential child created meanwhile is not seen;
// it is no participant, so no one else holds because of it. Our node
// cannot be gone unseen either: the engine also needs our node's owner to
// be the current session, with no error state since (an ephemeral node of
// a live session goes only by an explicit delete).
//
// The lookahead (HandoffDriver.Lookahead) names, for a waiter further back
// that watches watch, the node whose deletion is worth listing again for
// before watch goes: the node two ahead of a mutex waiter (or a writer
// whose predecessor is not a write node). When it goes, typically because
// our predecessor now holds, the waiter lists again while the predecessor
// holds, finds itself second in line, and so holds the moment the
// predecessor's node is deleted: the re-listing Curator does after every
// hand-off moves off the critical path. Each deletion then wakes at most
// two waiters: its successor and the one after; "" means no lookahead.

// standardDriver is StandardLockInternalsDriver (locktree.Standard): hold
// when fewer than maxLeases nodes sort before ours; otherwise wait on the
// node maxLeases places ahead (for a mutex, the immediate predecessor: no
// herd). key is the sort key: the lock name's, or the read-write lock's for
// its write half (writeDriver).
type standardDriver struct {
	key       func(name string) string
	keyName   string // names key, for Order
	maxLeases int
}

// lockNameDriver is the standard driver sorting by the key of lockName.
func lockNameDriver(lockName string, maxLeases int) standardDriver {
	return standardDriver{key: locktree.KeyFor(lockName), keyName: lockName, maxLeases: maxLeases}
}

func (d standardDriver) Sort(children []string) []string { return locktree.Sort(children, d.key) }

func (d standardDriver) Order() string { return d.keyName }

// readWriteOrder is the order of the read-write lock's drivers: both halves
// sort by locktree.ReadWriteSortKey.
const readWriteOrder = "read-write"

func (d standardDriver) Check(sorted []string, ourName string) (bool, string, error) {
	held, watch, found := locktree.Standard(sorted, ourName, d.maxLeases)
	if !found {
		return false, "", acquire.ErrVanished
	}
	return held, watch, nil
}

func (d standardDriver) HandsOff(sorted []string, ourName, watch string) bool {
	return d.maxLeases == 1 && locktree.IndexOf(sorted, ourName) == 1 && !locktree.IsWrite(watch)
}

func (d standardDriver) Lookahead(sorted []string, ourName, watch string) string {
	i := locktree.IndexOf(sorted, ourName)
	if d.maxLeases != 1 || i < 2 || sorted[i-1] != watch || locktree.IsWrite(watch) {
		return ""
	}
	return sorted[i-2]
}

// writeDriver is the read-write lock's write half: the standard rule with
// one lease over the read-write key (locktree.Write), which also counts a
// write node behind nothing but its own downgrade read node as holding (a
// writer only has one while it holds).
type writeDriver struct{ standardDriver }

func newWriteDriver() writeDriver {
	return writeDriver{standardDriver{key: locktree.ReadWriteSortKey, keyName: readWriteOrder, maxLeases: 1}}
}

func (writeDriver) Check(sorted []string, ourName string) (bool, string, error) {
	held, watch, found := locktree.Write(sorted, ourName)
	if !found {
		return false, "", acquire.ErrVanished
	}
	return held, watch, nil
}

// The drivers are the engine's.
var (
	_ acquire.HandoffDriver  = standardDriver{}
	_ acquire.HandoffDriver  = writeDriver{}
	_ acquire.HandoffDriver  = readDriver{}
	_ acquire.CountingDriver = leaseDriver{}
)
