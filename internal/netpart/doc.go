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
// New refuses to start when any of the net's names or addresses already
// exist (ErrInUse while the run that built them goes on, else ErrExists),
// unless they are the remains of a run of the same prefix whose process has
// died (recorded in an owner file), which it sweeps first. Close
// tears everything down; call it however the test ends (t.Cleanup). A run
// needs root, iproute2's ip and nftables' nft: Available says why not.
package netpart
