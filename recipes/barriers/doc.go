// Package barriers holds Apache Curator's barrier recipes for Go, on
// Curator's nodes, so that Go and Java processes wait at one barrier: a
// DistributedBarrier holds every process back while its node exists; a
// DistributedDoubleBarrier lets its members begin together, once enough
// have entered, and end together, once all have left.
//
// # In short
//
//	member, err := barriers.NewDistributedDoubleBarrier(client, "/barriers/nightly", 4)
//	...
//	if err := member.Enter(ctx); err != nil { // until 4 members have entered
//		return err
//	}
//	work(ctx)
//	if err := member.Leave(ctx); err != nil { // until every member has left
//		return err
//	}
//
// The nodes: a DistributedBarrier is its path; a DistributedDoubleBarrier's
// members are ephemeral nodes under its path named by random UUIDs, and
// "ready" beside them is made by the member that completes the count
// (all with the client's default data, container parents), as Curator's.
//
// Every call that waits takes a context; its end is an error wrapping the
// context's (Curator's false after a timeout). The client's event hook
// hears a BarrierPassed event (its BarrierEvent's Step "wait", "enter" or "leave",
// with the time waited) each time a member passes. Misuse is an error,
// never a panic or a hang: a nil or closed client, a bad path, a nil
// context, a zero value, a member under 1, a member that enters twice or
// leaves without entering (recipes.ErrInvalidState).
//
// # Curator correspondence
//
//	Curator (org.apache.curator.framework.recipes.barriers)  gocurator
//	DistributedBarrier(client, barrierPath)                  NewDistributedBarrier(client, path)
//	setBarrier(), removeBarrier()                            SetBarrier(ctx), RemoveBarrier(ctx)
//	waitOnBarrier(), waitOnBarrier(maxWait, unit)            WaitOnBarrier(ctx) (the deadline is maxWait)
//	DistributedDoubleBarrier(client, barrierPath, memberQty) NewDistributedDoubleBarrier(client, path, memberQty)
//	enter(), enter(maxWait, unit)                            Enter(ctx)
//	leave(), leave(maxWait, unit)                            Leave(ctx)
//
// Differences: a member's Enter passes only when its count of the members'
// nodes reaches memberQty or "ready" is there, never on a wake-up alone
// (Curator up to 5.9 passes on any watch event, a reconnect's included:
// GH-1290); an Enter that gives up deletes its member node (Curator leaves
// it, counted as a member); a member whose session ends while it waits
// fails Enter (wrapping zk.ErrSessionExpired, where Curator throws
// ConnectionLossException) and may enter again. As in Curator, a "ready"
// left by a round whose members never left lets the next round's members
// pass at once: a barrier's path is for one round at a time.
package barriers
