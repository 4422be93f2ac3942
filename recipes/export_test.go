package recipes

// ZooKeeperForExamples returns the connect string of the ZooKeeper server
// TestMain starts, for the examples in package recipes_test.
func ZooKeeperForExamples() string { return server.Addr() }
