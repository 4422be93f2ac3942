package framework

import (
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/errs"
)

// ValidatePath returns an error if ZooKeeper would refuse path, nil if not.
// It applies ZooKeeper's own rules (Java's PathUtils): the path must be
// absolute, must not end in "/" (except the root), must have no empty,
// "." or ".." segment, and no NUL or other forbidden character. The error
// unwraps to both ErrInvalidArgument, the module's one sentinel of a bad
// argument, and zk.ErrInvalidPath.
func ValidatePath(path string) error {
	if reason := pathProblem(path); reason != "" {
		return &PathError{Path: path, Problem: reason}
	}
	return nil
}

// PathError is a path ZooKeeper refuses, and why. It unwraps to
// ErrInvalidArgument and zk.ErrInvalidPath.
type PathError struct {
	// Path is the path refused, as given.
	Path string
	// Problem says what is wrong with it.
	Problem string
}

// Error returns "gocurator: invalid path "<path>": <problem>", with a long
// path shortened.
func (e *PathError) Error() string {
	return fmt.Sprintf("%sinvalid path %q: %s", errs.Prefix, errs.Path(e.Path), e.Problem)
}

// Unwrap returns ErrInvalidArgument and zk.ErrInvalidPath.
func (e *PathError) Unwrap() []error { return []error{ErrInvalidArgument, zk.ErrInvalidPath} }

func pathProblem(path string) string {
	if plainPath(path) {
		return ""
	}
	return fullPathProblem(path)
}

// fullPathProblem says what is wrong with path by ZooKeeper's rules, or "".
func fullPathProblem(path string) string {
	switch {
	case path == "":
		return "path must not be empty"
	case path[0] != '/':
		return "path must start with /"
	case path == "/":
		return ""
	case path[len(path)-1] == '/':
		return "path must not end with /"
	}
	for seg := range strings.SplitSeq(path[1:], "/") {
		switch seg {
		case "":
			return "empty segment (//)"
		case ".", "..":
			return "relative segment " + seg
		}
	}
	for _, r := range path {
		switch {
		case r == 0:
			return "NUL character"
		case r > 0 && r < 0x20, r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return fmt.Sprintf("invalid character %U", r)
		}
	}
	return ""
}

// plainPath reports, in one pass over the bytes, that path is one of the
// paths every operation meets (printable ASCII segments, none empty, "."
// or ".."), and so valid; false means that pathProblem must look closer.
func plainPath(path string) bool {
	if len(path) < 2 || path[0] != '/' || path[len(path)-1] == '/' {
		return false
	}
	seg := 1 // where the current segment starts
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			if c := path[i]; c < 0x20 || c > 0x7e {
				return false
			}
			continue
		}
		switch i - seg {
		case 0:
			return false
		case 1:
			if path[seg] == '.' {
				return false
			}
		case 2:
			if path[seg] == '.' && path[seg+1] == '.' {
				return false
			}
		}
		seg = i + 1
	}
	return true
}

// reservedTree is the tree a ZooKeeper server keeps for itself (quotas,
// the ensemble's config).
const reservedTree = "/zookeeper"

// IsReserved reports whether path is /zookeeper or below it: the servers'
// own tree (quotas, the ensemble's config), which the servers let clients
// write to but which is no place for an application's nodes. The recipes
// refuse it.
func IsReserved(path string) bool {
	rest, ok := strings.CutPrefix(path, reservedTree)
	return ok && (rest == "" || rest[0] == '/')
}

// JoinPath joins a parent path and a child name. It does what Curator's
// ZKPaths.makePath does for the common case: JoinPath("/a", "b") and
// JoinPath("/a/", "b") are "/a/b"; JoinPath("/", "b") is "/b".
func JoinPath(parent, child string) string {
	parent = strings.TrimSuffix(parent, "/")
	child = strings.TrimPrefix(child, "/")
	if child == "" {
		if parent == "" {
			return "/"
		}
		return parent
	}
	return parent + "/" + child
}

// SplitPath returns the parent path and the last segment of path:
// SplitPath("/a/b") is ("/a", "b") and SplitPath("/a") is ("/", "a").
func SplitPath(path string) (parent, name string) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/", path[i+1:]
	}
	return path[:i], path[i+1:]
}

// namespace maps the caller's paths into the client's namespace and back.
type namespace string // "" or "/ns"

func (ns namespace) fix(path string) string {
	if ns == "" {
		return path
	}
	if path == "/" {
		return string(ns)
	}
	return string(ns) + path
}

func (ns namespace) unfix(path string) string {
	if ns == "" {
		return path
	}
	if rest, ok := strings.CutPrefix(path, string(ns)); ok && (rest == "" || rest[0] == '/') {
		if rest == "" {
			return "/"
		}
		return rest
	}
	return path
}
