package lockqueue

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/protected"
)

// goZKProtected matches go-zookeeper's protected prefix: "_c_" + 32 hex
// digits (a GUID without dashes) + "-". Curator's has a 36-character UUID.
var goZKProtected = regexp.MustCompile(`^_c_[0-9a-f]{32}-`)

// checkLockNode warns about a lock (or lease) node of the lock named
// lockName that Curator would still not treat as its own: unprotected,
// go-zookeeper-protected, or not ephemeral.
func (l *Listing) checkLockNode(p *Participant, lockName string) {
	switch {
	case protected.Is(p.Node):
	case goZKProtected.MatchString(p.Node):
		l.warnf(p.Path, "go-zookeeper protected name (_c_ + 32 hex digits): it sorts correctly among %s nodes, but Curator's ProtectedUtils does not recognise it as protected (it wants a 36-character UUID), so Curator's protected-create recovery and ProtectedUtils.normalize pass it by", strings.TrimSuffix(lockName, "-"))
	default:
		l.warnf(p.Path, "not protected (no _c_<uuid>- prefix): it sorts correctly, but its creator cannot find it again after a lost create reply, and Curator's ProtectedUtils does not recognise it")
	}
	if p.Session == "" {
		l.warnf(p.Path, "not ephemeral: it does not end with a session, so it stays in the queue until someone deletes it")
	}
}

// foreign warns about a child without the lock's marker lockName in a
// mutex (or internal lock) queue, with behind lock nodes after it.
func (l *Listing) foreign(p *Participant, lockName string, first bool, behind int) {
	var msg string
	switch {
	case isKazoo(p.Node):
		msg = fmt.Sprintf("Kazoo-style lock node: it has no %q marker, so Curator and gocurator sort it by its whole name while Kazoo uses its own order; Kazoo and Curator contenders on one path do not exclude each other", lockName)
	case locktree.IsRead(p.Node) || locktree.IsWrite(p.Node):
		msg = fmt.Sprintf("read-write lock node among %s nodes: each recipe sorts the other's nodes by their whole name, so the two recipes' holders do not exclude each other", lockName)
	default:
		msg = fmt.Sprintf("foreign child: no %q marker, so every participant sorts it by its whole name", lockName)
	}
	switch {
	case first && behind > 0:
		msg += fmt.Sprintf("; it sorts first, so no contender gets the lock until it is deleted (%d lock nodes wait behind it)", behind)
	case behind > 0:
		msg += fmt.Sprintf("; %d lock nodes sort after it and wait for it forever", behind)
	default:
		msg += "; it sorts after every lock node and blocks no one now"
	}
	l.warnf(p.Path, "%s", msg)
}

// foreignRW warns about a child that is neither a read nor a write node.
func (l *Listing) foreignRW(p *Participant, blocksWriter bool) {
	var msg string
	switch {
	case isKazoo(p.Node):
		msg = "Kazoo-style lock node: no __READ__/__WRIT__ marker, so Curator and gocurator sort it by its whole name while Kazoo uses its own order; Kazoo and Curator contenders on one path do not exclude each other"
	case locktree.IsLock(p.Node):
		msg = "mutex node in a read-write lock: sorted by its whole name and never seen as a writer"
	default:
		msg = "foreign child: no __READ__/__WRIT__ marker, so every participant sorts it by its whole name"
	}
	if blocksWriter {
		msg += "; a writer sorts after it and waits for it forever (readers ignore it)"
	} else {
		msg += "; no writer sorts after it now, and readers ignore it"
	}
	l.warnf(p.Path, "%s", msg)
}

// isKazoo reports whether name looks like a Kazoo lock node
// (<uuid hex>__lock__<seq> or __rlock__).
func isKazoo(name string) bool {
	return strings.Contains(name, "__lock__") || strings.Contains(name, "__rlock__")
}

// warnf adds a warning once.
func (l *Listing) warnf(node, format string, args ...any) {
	w := Warning{Node: node, Message: fmt.Sprintf(format, args...)}
	for _, old := range l.Warnings {
		if old == w {
			return
		}
	}
	l.Warnings = append(l.Warnings, w)
}
