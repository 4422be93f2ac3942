package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
)

// Curator's protected-node format (ProtectedUtils): "_c_" + a 36-character
// UUID + "-" in front of the last path segment.
const (
	protectedPrefix = "_c_"
	// ProtectedPrefixLength is the length of "_c_<uuid>-": 40.
	ProtectedPrefixLength = len(protectedPrefix) + 36 + 1
)

// NewProtectedID returns a random version-4 UUID in the canonical lowercase
// 8-4-4-4-12 form, as Java's UUID.randomUUID().toString().
func NewProtectedID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// ProtectedName returns name with the protection prefix for id: "_c_<id>-<name>".
func ProtectedName(id, name string) string { return protectedPrefix + id + "-" + name }

// IsProtectedName reports whether a node name carries Curator's protection
// prefix, by Curator's own test (ProtectedUtils.isProtectedZNode): longer
// than 40 characters, "_c_" first, "-" at index 39, and a UUID in between.
func IsProtectedName(name string) bool {
	return len(name) > ProtectedPrefixLength &&
		strings.HasPrefix(name, protectedPrefix) &&
		name[ProtectedPrefixLength-1] == '-' &&
		isUUID(name[len(protectedPrefix):ProtectedPrefixLength-1])
}

// ProtectedID returns the UUID of a protected name, and whether it is one.
func ProtectedID(name string) (string, bool) {
	if !IsProtectedName(name) {
		return "", false
	}
	return name[len(protectedPrefix) : ProtectedPrefixLength-1], true
}

// NormalizeProtectedName strips the protection prefix from a protected name
// and returns any other name unchanged (Curator's ProtectedUtils.normalize).
func NormalizeProtectedName(name string) string {
	if IsProtectedName(name) {
		return name[ProtectedPrefixLength:]
	}
	return name
}

// isUUID accepts the canonical 8-4-4-4-12 hexadecimal form, either case.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// createProtected is Curator's protected create (curator-lock-trees.md §2):
// the first attempt just creates; every later attempt first looks for a
// child with our prefix, which a create whose reply was lost has left. A node
// found from a session other than the one the create began in is deleted and
// not used (its session is gone, or going). When the create finally fails,
// whatever it may have made is found and deleted in the background.
func (c *Client) createProtected(ctx context.Context, path string, data []byte, o createOptions) (string, error) {
	parent, name := SplitPath(c.ns.fix(path))
	prefix := ProtectedName(NewProtectedID(), "")
	full := JoinPath(parent, prefix+name)
	session := c.SessionID()
	first := true
	var abandoned <-chan struct{}
	created, err := retryLoop(ctx, c, "create", path, func(z *zk.Conn) (string, error) {
		if !first {
			found, err := findProtected(z, parent, prefix)
			if err != nil {
				return "", err
			}
			if found != "" {
				if !o.mode.IsEphemeral() || c.SessionID() == session {
					return found, nil
				}
				c.log.Info("protected create found a node of an earlier session; deleting it", zap.String("path", found))
				c.deleteInBackground(found)
			}
		}
		first = false
		session = c.SessionID()
		return c.createWithParents(z, full, data, o)
	}, &abandoned)
	if err == nil {
		return c.ns.unfix(created), nil
	}
	if c.retryable(err) || ctx != nil && ctx.Err() != nil {
		c.findAndDeleteInBackground(parent, prefix, abandoned)
	}
	return "", opError("create", path, err)
}

// findProtected returns the server path of the first child of parent (in
// server order) whose name starts with prefix, or "".
func findProtected(z *zk.Conn, parent, prefix string) (string, error) {
	children, _, err := z.Children(parent)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) {
			return JoinPath(parent, ch), nil
		}
	}
	return "", nil
}
