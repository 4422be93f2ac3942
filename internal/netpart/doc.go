// Package netpart builds a small network of Linux network namespaces for
// tests that cut it the way networks fail (compat_test's partition suite,
// docs/guarantees.md "The partition suite"): each node (a ZooKeeper member,
// a client process) in a namespace of its own, every node joined by a veth
// pair to one Linux bridge in a namespace of the net's own, and the test
// process joined to the same bridge by a veth of its own (the observer),
// which no cut ever touches. Addresses come from a subnet of 198.18.0.0/15,
// the range reserved for benchmarking test networks, never a real network.
//
// Cuts are nftables rules in the bridge's namespace: a set of (source,
// destination) address pairs whose packets the bridge drops, replaced as a
// whole and atomically by Apply. A Link is one direction, so that a cut can
// be one-way; Split, Between and OneWay build the usual shapes.
//
// One net of a prefix stands at a time: New locks the prefix's owner file
// until Close (ErrInUse for a second New meanwhile, in this process or
// another). It refuses to start when any of the net's names (exactly those
// it makes) or addresses already exist (ErrExists), unless they are the
// remains of a run of the same prefix whose process has died (recorded in
// the owner file, names and all), which it sweeps first. Close tears down
// what New built, nothing else; call it however the test ends
// (t.Cleanup). A run needs root, iproute2's ip and nftables' nft:
// Available says why not.
package netpart
