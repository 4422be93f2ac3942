package recipes

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// Participant is a candidate of a leader election (Curator's Participant):
// its id, as its node's data says, and whether it leads.
type Participant struct {
	// ID is the candidate's participant id (the UTF-8 text of its node's
	// data): WithParticipantID's, or, for a LeaderSelector without one, the
	// client's default data (the local IP address), as in Curator.
	ID string
	// IsLeader is true for the first candidate in the queue.
	IsLeader bool
}

// ErrNotLeader is what a latch's or selector's Err wraps while it does not
// lead.
var ErrNotLeader = errors.New("gocurator: not the leader")

// ElectionOption configures a LeaderLatch or a LeaderSelector.
type ElectionOption interface{ applyElection(*electionOptions) }

type electionOptions struct {
	id          string
	closeMode   CloseMode
	autoRequeue bool
	latchOnly   string // the name of a latch-only option given, for the selector to refuse
	selector    string // the name of a selector-only option given, for the latch to refuse
}

type electionOptionFunc func(*electionOptions)

func (f electionOptionFunc) applyElection(o *electionOptions) { f(o) }

// WithParticipantID sets the candidate's participant id, which other
// candidates (Go or Java) read from its node. It is Curator's id argument of
// LeaderLatch and LeaderSelector.setId. The default is "" (a latch's node is
// then empty; a selector's holds the client's default data).
func WithParticipantID(id string) ElectionOption {
	return electionOptionFunc(func(o *electionOptions) { o.id = id })
}

// WithCloseMode sets what a LeaderLatch's Close tells its listeners
// (Curator's CloseMode; default CloseSilent). Latches only.
func WithCloseMode(m CloseMode) ElectionOption {
	return electionOptionFunc(func(o *electionOptions) { o.closeMode, o.latchOnly = m, "WithCloseMode" })
}

// WithAutoRequeue makes a LeaderSelector queue again each time its
// leadership ends (Curator's autoRequeue). Selectors only.
func WithAutoRequeue() ElectionOption {
	return electionOptionFunc(func(o *electionOptions) { o.autoRequeue, o.selector = true, "WithAutoRequeue" })
}

func electionOptionsOf(opts []ElectionOption) electionOptions {
	var o electionOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyElection(&o)
		}
	}
	return o
}

// participants reads the ids of the candidates whose nodes are at the
// sorted paths (Curator's LeaderSelector.getParticipants), the first limit
// of them (all for 0): the first node still there leads; nodes gone
// meanwhile are left out.
func participants(ctx context.Context, client *framework.Client, sorted []string, limit int) ([]Participant, error) {
	var out []Participant
	for _, p := range sorted {
		if limit > 0 && len(out) == limit {
			break
		}
		data, _, err := client.GetData(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Participant{ID: string(data), IsLeader: len(out) == 0})
	}
	return out, nil
}

// leader is participants' first, or the zero Participant when there is
// none (Curator returns a Participant with an empty id then).
func leader(ctx context.Context, client *framework.Client, sorted []string) (Participant, error) {
	ps, err := participants(ctx, client, sorted, 1)
	if err != nil || len(ps) == 0 {
		return Participant{}, err
	}
	return ps[0], nil
}

// closedError is the error of a recipe value used after its Close, and the
// cause of a leader selector's function's context at Close: it wraps
// framework.ErrClosed, as the errors of a closed client do.
type closedError struct{ what string }

func (e closedError) Error() string { return errs.Prefix + e.what + " is closed" }
func (e closedError) Unwrap() error { return framework.ErrClosed }
