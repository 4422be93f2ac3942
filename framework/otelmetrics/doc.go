// Package otelmetrics records gocurator's lock, lease and leadership events
// (framework.Event) as OpenTelemetry metrics. It is a Go module of its own,
// so that only the programs that import it depend on OpenTelemetry:
//
//	m, err := otelmetrics.New(otel.GetMeterProvider())
//	...
//	client, err := framework.New(servers, policy, framework.WithEventHook(m))
//
// Every recipe on the client is then measured (its own Example serves the
// metrics to Prometheus at /metrics). The instruments, under the meter
// github.com/gocurator/curator/framework/otelmetrics:
//
//	gocurator.lock.acquire.duration  histogram, s   wait from an acquire's start to its grant
//	gocurator.lock.hold.duration     histogram, s   time a grant was held, to its release or loss
//	gocurator.lock.acquisitions      counter        grants
//	gocurator.lock.acquire.failures  counter        acquires that gave up, by error.type
//	gocurator.lock.losses            counter        grants lost, by error.type
//	gocurator.lock.waiter.count      up-down        acquires under way
//	gocurator.lock.holder.count      up-down        grants held
//	gocurator.leader.terms           counter        terms of leadership begun
//	gocurator.leader.term.duration   histogram, s   length of ended terms
//	gocurator.leader.losses          counter        terms ended other than given up, by error.type
//	gocurator.leader.count           up-down        terms under way
//
// Locks and leases (the "lock" instruments) are those of the mutex, the
// read-write lock's halves, the semaphore and the leader selector (which
// queues on a mutex); terms of leadership are the latch's and the
// selector's. Every instrument has two attributes, gocurator.path (the
// path the events name, or what WithPathLabel maps it to: the recipe's
// path as given to its constructor) and gocurator.recipe ("mutex", "read", "write",
// "semaphore", "latch", "selector"); the failures and losses have a third,
// error.type, one of a fixed set:
//
//	timeout      the acquire's context reached its deadline
//	locked       a try found the lock held elsewhere (recipes.ErrLocked)
//	canceled     the acquire's context was canceled
//	suspended    the connection was SUSPENDED (a *framework.StateError)
//	lost         the session was LOST (a *framework.StateError)
//	closed       the client (or the selector) was closed (framework.ErrClosed)
//	node_gone    the node was found gone (zk.ErrNoNode)
//	interrupted  a selector's term was interrupted (recipes.ErrLeadershipInterrupted)
//	_OTHER       anything else
//
// Node names and session ids are never attributes: the series a client
// makes are bounded by the paths it locks. A program that locks one path
// per order, per user, ... should map them to a few values with
// WithPathLabel.
//
// The up-down counters rely on each event being heard: an event hook too
// slow for its events has the oldest dropped (framework.EventHook; a WARN
// says so), and the counts may then drift.
package otelmetrics
