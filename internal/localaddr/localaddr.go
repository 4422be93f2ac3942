// Package localaddr is Curator's default node data, the text of the local
// host's address (CuratorFrameworkFactory.getLocalAddress()), in one place
// for the framework (a client's default data) and the recipes that write
// it whatever the client's default (recipes/nodes' GroupMember).
package localaddr

import (
	"net"
	"os"
)

// Bytes returns the text of the local host's address, as Java's
// InetAddress.getLocalHost().getHostAddress() (an IPv4 address if the
// host name has one), or empty data when the host's name or address
// cannot be found.
func Bytes() []byte {
	host, err := os.Hostname()
	if err != nil {
		return []byte{}
	}
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 {
		return []byte{}
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			return []byte(a)
		}
	}
	return []byte(addrs[0])
}
