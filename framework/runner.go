package framework

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/gocurator/curator/internal/zkconn"
)

// go-zookeeper's calls take no context and block until the server answers
// (or the connection fails, within go-zookeeper's own timeouts). For a
// caller's context to cut a call short, the call must run on another
// goroutine while the caller waits for it or for the context. Starting a
// goroutine per call costs a goroutine, its stack, two channels and a
// closure on every ZooKeeper call; a client instead keeps a few idle
// goroutines, its runners, and hands each such call to one.
//
// A call either ends with its caller still waiting (the runner signals
// done, the caller takes the result and gives the runner back to the pool)
// or is abandoned by its caller whose context ended (the runner, when the
// call ends, drops the result, closes the caller's pending channel and puts
// itself back). Who has the call is settled by one compare-and-swap on the
// job's state, so a result is never written where a caller that has gone
// could read it, and a runner is never reused while its done is unread.

// maxIdleRunners bounds the runners a client keeps between calls; more are
// started when more calls are in flight at once, and end when they find
// the pool full.
const maxIdleRunners = 32

// A job's states.
const (
	jobRunning   int32 = iota
	jobFinished        // ended with its caller waiting: the result is the caller's
	jobAbandoned       // its caller has gone: the result is dropped
)

// job is one call handed to a runner.
type job interface {
	run()
	handoff() *jobState
}

// jobState settles between a runner and a caller who has the call's end.
type jobState struct {
	state   atomic.Int32
	pending chan struct{} // set by a caller before it abandons the job; closed when the call has ended
}

// attempter makes one attempt of an operation on a go-zookeeper
// connection; arg is what it works on, usually the server path (passed
// along rather than captured, so that an attempt that needs nothing else is
// a func without captures, and allocates nothing).
type attempter[T any] interface {
	attempt(z *zkconn.Conn, arg string) (T, error)
}

// attemptFunc is a func as an attempter.
type attemptFunc[T any] func(z *zkconn.Conn, arg string) (T, error)

func (f attemptFunc[T]) attempt(z *zkconn.Conn, arg string) (T, error) { return f(z, arg) }

// callJob is a go-zookeeper call, a.attempt(z, arg), and its result.
type callJob[T any] struct {
	jobState
	a   attempter[T]
	z   *zkconn.Conn
	arg string
	v   T
	err error
}

func (j *callJob[T]) run()               { j.v, j.err = j.a.attempt(j.z, j.arg) }
func (j *callJob[T]) handoff() *jobState { return &j.jobState }

// runner is a goroutine of the client's that runs the jobs sent on work.
// A runner is started with the job it is started for, and decides itself,
// as each job ends, whether it will go back to the pool (kept: there is
// room) or end; only a runner kept makes its work channel. So in a burst of
// calls (thousands of lock waiters queueing at once), where most runners
// end after their one job, they leave no channel each as garbage among the
// waiters' live objects.
type runner struct {
	work chan job      // nil until the runner is first kept
	done chan struct{} // one token per job that ended with its caller waiting
	// kept says whether the runner goes back to the pool after the job
	// that just ended: set by the runner before it sends on done (or, for
	// an abandoned job, before it puts itself back), read by whoever puts
	// it back.
	kept bool
}

// runners is a client's pool of idle runners.
type runners struct {
	mu      sync.Mutex
	idle    []*runner
	keeping int // runners kept whose put has not come yet: idle plus keeping stay within maxIdleRunners
	closed  bool
	wg      sync.WaitGroup // every runner started
}

// start hands j to an idle runner, or to a new one started with it, and
// returns it; nil when the client is closed (j is then not run).
func (p *runners) start(j job) *runner {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	if n := len(p.idle); n > 0 {
		r := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		r.work <- j
		return r
	}
	p.wg.Add(1)
	p.mu.Unlock()
	r := &runner{done: make(chan struct{}, 1)}
	go p.loop(r, j)
	return r
}

// finish waits for j, which r runs, or for ctx. If j ends first (or as ctx
// does), its result is the caller's, and finish gives r back. If ctx ends
// first, j is abandoned: finish returns false and a channel closed once j
// has ended, and r goes back to the pool by itself then.
func (p *runners) finish(ctx context.Context, r *runner, j job) (ok bool, pending <-chan struct{}) {
	select {
	case <-r.done:
	case <-ctx.Done():
		if pending, abandoned := p.abandon(j); abandoned {
			return false, pending
		}
		<-r.done // it ended as ctx did: the result is the caller's after all
	}
	p.put(r)
	return true, nil
}

// drop gives j, which r runs, up: the caller will not read its result.
func (p *runners) drop(r *runner, j job) {
	if _, abandoned := p.abandon(j); !abandoned {
		<-r.done
		p.put(r)
	}
}

// abandon settles that j's caller has gone, unless j has ended already.
func (p *runners) abandon(j job) (pending <-chan struct{}, abandoned bool) {
	s := j.handoff()
	ch := make(chan struct{})
	s.pending = ch
	return ch, s.state.CompareAndSwap(jobRunning, jobAbandoned)
}

// keep settles, as r's job ends, whether r goes back to the pool: it does
// while there is room (counting the runners kept before whose put has not
// come yet), and then has a work channel.
func (p *runners) keep(r *runner) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.kept = !p.closed && len(p.idle)+p.keeping < maxIdleRunners
	if r.kept {
		p.keeping++
		if r.work == nil {
			r.work = make(chan job, 1)
		}
	}
}

// put gives r back to the pool if it was kept (keep), and otherwise does
// nothing: it has ended, or is ending, by itself. A runner kept that comes
// back to a closed pool is ended. r has no job, and its done holds no
// token.
func (p *runners) put(r *runner) {
	if !r.kept {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keeping--
	if p.closed {
		close(r.work)
		return
	}
	p.idle = append(p.idle, r)
}

// close ends the idle runners, and every other one as it comes back; wait
// then waits for them all.
func (p *runners) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, r := range p.idle {
		close(r.work)
	}
	p.idle = nil
}

// wait waits until every runner has ended (after close).
func (p *runners) wait() { p.wg.Wait() }

// loop runs j, the job r was started for, then, while r is kept, each job
// sent on r's work channel, until that is closed.
func (p *runners) loop(r *runner, j job) {
	defer p.wg.Done()
	for {
		j.run()
		p.keep(r)
		kept := r.kept // r is the putter's once done is sent
		s := j.handoff()
		if s.state.CompareAndSwap(jobRunning, jobFinished) {
			r.done <- struct{}{} // the caller takes it, and puts r back
		} else {
			close(s.pending) // abandoned: nobody reads the result
			p.put(r)
		}
		if !kept {
			return
		}
		var ok bool
		if j, ok = <-r.work; !ok {
			return
		}
	}
}
