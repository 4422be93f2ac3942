// Package otelmetrics records gocurator's lock, lease and leadership events
// (framework.Event) as OpenTelemetry metrics and traces. It is a Go module
// of its own, so that only the programs that import it depend on
// OpenTelemetry:
//
//	m, err := otelmetrics.New(otel.GetMeterProvider())
//	...
//	t, err := otelmetrics.NewTracing(otel.GetTracerProvider())
//	...
//	client, err := framework.New(servers, policy, framework.WithEventHook(m), framework.WithEventHook(t))
//
// Each is an event hook; a client hears any number of hooks
// (framework.WithEventHook adds one), yours among them. Every recipe on
// the client is then measured (the Example serves the metrics to
// Prometheus at /metrics) and traced.
//
// # Metrics
//
// The instruments, under the meter
// github.com/gocurator/curator/framework/otelmetrics:
//
//	gocurator.lock.acquire.duration  histogram, s   wait of every acquire that ended, to its grant or failure, by gocurator.outcome
//	gocurator.lock.hold.duration     histogram, s   time a grant was held, to its release or loss, by gocurator.outcome
//	gocurator.lock.hold.oldest_age   gauge, s       age of the oldest grant held now (none held: no sample)
//	gocurator.lock.acquisitions      counter        grants
//	gocurator.lock.acquire.failures  counter        acquires that failed, by error.type (a try's locked is no failure)
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
// path as given to its constructor) and gocurator.recipe ("mutex", "read",
// "write", "semaphore", "latch", "selector"). The wait histogram has a
// third, gocurator.outcome, how the acquire ended:
//
//	acquired  granted
//	timeout   the acquire's context reached its deadline first (no_server aside: below)
//	canceled  the acquire's context was canceled first
//	locked    a try found the lock held elsewhere (recipes.ErrLocked): a try's answer, not a fault
//	failed    anything else (no server answered, the connection or the session lost, the client closed, ...)
//
// The hold histogram has it too, how the hold ended: released, or lost.
// The oldest hold's age is observed at each collection, per path and
// recipe, from the grants this Metrics heard begin and not yet end: a
// hold that does not end (a holder stuck, a release forgotten) shows as an
// age that only grows, without scraping the tree.
//
// The failures and losses have a third, error.type, one of a fixed set
// (an acquire's outcome, when not acquired, is its error.type where that
// is timeout, canceled or locked, and failed otherwise). A try's locked
// is an outcome of the wait histogram only: the failures count faults.
//
//	timeout      the acquire's context reached its deadline
//	locked       a try found the lock held elsewhere (recipes.ErrLocked)
//	canceled     the acquire's context was canceled
//	no_server    no server answered (a *framework.NoServerError: every server refused, or
//	             none answered before the retries or the acquire's deadline ran out)
//	suspended    the connection was SUSPENDED (a *framework.StateError)
//	lost         the session was LOST (a *framework.StateError)
//	closed       the client (or the selector) was closed (framework.ErrClosed)
//	node_gone    the node was found gone (zk.ErrNoNode)
//	interrupted  a selector's term was interrupted (recipes.ErrLeadershipInterrupted)
//	_OTHER       anything else
//
// Node names and session ids are never attributes of a metric: the series
// a client makes are bounded by the paths it locks. A program that locks
// one path per order, per user, ... should map them to a few values with
// WithPathLabel. Measurements are made with the acquire's context (the
// event's Context), so that an SDK keeping exemplars links them to the
// caller's trace.
//
// Hooks too slow for their events have events dropped, but never the end
// of what they heard begin (framework.EventHook: an acquisition whose start
// is dropped is not told at all), so the up-down counts stay true; what is
// dropped is missing from the counters and histograms
// (Client.EventsDropped counts it, and a WARN says so).
//
// # Traces
//
// A Tracing records two spans, under the tracer
// github.com/gocurator/curator/framework/otelmetrics:
//
//	gocurator.lock.acquire  an acquire's wait, from its start to its grant or failure
//	gocurator.lock.hold     a grant, from the grant to its release or loss
//
// Each is a child of the span in the context the acquire was called with
// (h.Acquire(ctx): the events carry its values as their Context), so that
// a request's trace shows how long it waited for its lock and how long it
// held it. A span is recorded when what it spans has ended, with the times
// the events tell. Their attributes: gocurator.path (as given to the
// recipe's constructor, never mapped), gocurator.recipe, gocurator.outcome
// (an acquire's, as above; a hold's: released or lost),
// gocurator.queue.position (an acquire granted: its node's place in the
// queue at its first look, 0 when it held at once), gocurator.node and
// gocurator.session (the lock node and its session, in hex), and
// error.type (as above) when it failed or was lost. A failed acquire (but
// a try's locked) and a lost hold have an Error status with the error's
// text.
//
// # Versions
//
// The module requires the core module (github.com/gocurator/curator) at
// the version released with it, and the same go line; a checkout develops
// both through the repository's go.work. docs/releasing.md tells how they
// are released.
package otelmetrics
