// Package protected is Curator's protected-node name format
// (ProtectedUtils), its one home: "_c_<uuid>-" in front of a node's name,
// which lets a create whose reply was lost find its node again. The
// framework's protected create makes such names; internal/locktree and
// internal/lockqueue read them on lock nodes. It knows nothing of locks.
package protected

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strings"
)

// The format: "_c_" + a 36-character UUID + "-" in front of the last path
// segment.
const (
	prefix = "_c_"
	// PrefixLength is the length of "_c_<uuid>-": 40.
	PrefixLength = len(prefix) + 36 + 1
)

// NewID returns a random version-4 UUID in the canonical lowercase
// 8-4-4-4-12 form, as Java's UUID.randomUUID().toString().
func NewID() string {
	id := NewIDBytes()
	return string(id[:])
}

// NewIDBytes is NewID as bytes, for a caller that builds
// a protected name of its own without an allocation for the id.
func NewIDBytes() [36]byte {
	// math/rand/v2's generator (ChaCha8, seeded from the OS) is random enough
	// for a name that must not collide, as Java's UUID.randomUUID is, and,
	// unlike crypto/rand.Read, allocates nothing in any build mode.
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
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
	return s
}

// Name returns name with the protection prefix for id: "_c_<id>-<name>".
func Name(id, name string) string { return prefix + id + "-" + name }

// WriteName writes Name(id, name) to b, for an id from
// NewIDBytes: a caller that builds a whole path in b allocates
// once.
func WriteName(b *strings.Builder, id [36]byte, name string) {
	b.WriteString(prefix)
	b.Write(id[:])
	b.WriteByte('-')
	b.WriteString(name)
}

// Is reports whether a node name carries Curator's protection
// prefix, by Curator's own test (ProtectedUtils.isProtectedZNode): longer
// than 40 characters, "_c_" first, "-" at index 39, and a UUID in between.
func Is(name string) bool {
	return len(name) > PrefixLength &&
		strings.HasPrefix(name, prefix) &&
		name[PrefixLength-1] == '-' &&
		isUUID(name[len(prefix):PrefixLength-1])
}

// ID returns the UUID of a protected name, and whether it is one.
func ID(name string) (string, bool) {
	if !Is(name) {
		return "", false
	}
	return name[len(prefix) : PrefixLength-1], true
}

// Normalize strips the protection prefix from a protected name and
// returns any other name unchanged (Curator's ProtectedUtils.normalize).
func Normalize(name string) string {
	if Is(name) {
		return name[PrefixLength:]
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
