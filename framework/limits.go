package framework

import "github.com/go-zookeeper/zk"

// DefaultJuteMaxBuffer is ZooKeeper's default jute.maxbuffer: the largest
// request, in bytes, a server accepts (0xfffff, just under 1 MiB). A request
// that is larger makes the server drop the whole connection, with every
// request in flight on it; the client then sees connection loss, retries,
// and goes SUSPENDED, which every lock it holds takes as lost. So the client
// refuses such a request itself, before sending it.
const DefaultJuteMaxBuffer = 0xfffff

// WithJuteMaxBuffer tells the client the servers' jute.maxbuffer, if it was
// raised above DefaultJuteMaxBuffer. jute.maxbuffer is a Java system property
// of the server. Create, SetData and Multi refuse, with an error wrapping
// ErrInvalidArgument, a request that would be larger than n bytes on the wire
// (its data, path and ACL, and a few bytes of header).
func WithJuteMaxBuffer(n int) Option {
	return optionFunc(func(c *config) { c.juteMaxBuffer = n })
}

// JuteMaxBuffer returns the servers' jute.maxbuffer the client assumes: the
// largest request, in bytes, it sends. It is DefaultJuteMaxBuffer, or
// WithJuteMaxBuffer's.
func (c *Client) JuteMaxBuffer() int {
	if !c.usable() {
		return DefaultJuteMaxBuffer
	}
	return c.cfg.juteMaxBuffer
}

// The sizes of requests as jute encodes them: ints are 4 bytes, strings and
// byte arrays a 4-byte length and their bytes, vectors a 4-byte count and
// their elements.
const (
	requestHeaderSize = 8 // xid, op code
	multiHeaderSize   = 9 // op type, done flag, error code
)

func stringSize(s string) int { return 4 + len(s) }

func aclSize(acl []zk.ACL) int {
	n := 4
	for _, a := range acl {
		n += 4 + stringSize(a.Scheme) + stringSize(a.ID)
	}
	return n
}

// createSize is the size of a create's body (path, data, ACL, flags).
func createSize(serverPath string, data []byte, acl []zk.ACL) int {
	return stringSize(serverPath) + 4 + len(data) + aclSize(acl) + 4
}

// setDataSize is the size of a set-data's body (path, data, version).
func setDataSize(serverPath string, data []byte) int {
	return stringSize(serverPath) + 4 + len(data) + 4
}

// checkRequest validates path and the size of the request that would carry
// it: size returns the request's body size for the server path.
func (c *Client) checkRequest(op, path string, size func(serverPath string) int) error {
	if err := ValidatePath(path); err != nil {
		return opError(op, path, err)
	}
	return opError(op, path, c.checkSize(requestHeaderSize+size(c.ns.fix(path))))
}

// checkSize refuses a request of n bytes (without its length prefix) that
// the servers would not accept.
func (c *Client) checkSize(n int) error {
	if n <= c.cfg.juteMaxBuffer {
		return nil
	}
	return invalidArgument("request of %d bytes is larger than the servers' jute.maxbuffer (%d bytes; see WithJuteMaxBuffer): "+
		"ZooKeeper would drop the connection; keep node data well under 1 MB", n, c.cfg.juteMaxBuffer)
}
