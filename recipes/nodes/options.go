package nodes

import (
	"strings"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// Option changes how a PersistentNode or a PersistentTtlNode is made. Each
// says which of the two it applies to; the constructor of the other refuses
// it (an error wrapping framework.ErrInvalidArgument).
type Option interface {
	apply(*config)
}

// option is an Option of one or both constructors.
type option struct {
	name string // for the error of a constructor it does not apply to
	of   recipe // the constructors it applies to
	set  func(*config)
}

func (o option) apply(c *config) {
	if o.of&c.recipe == 0 {
		c.misplaced = append(c.misplaced, o.name)
		return
	}
	o.set(c)
}

// recipe is a set of the package's constructors.
type recipe int

const (
	persistentNode recipe = 1 << iota
	persistentTTLNode
)

// config is what the options set.
type config struct {
	recipe      recipe // the constructor applying them
	protected   bool
	ttl         time.Duration
	noParents   bool
	childName   string
	touchFactor int
	misplaced   []string // options given to a constructor they do not apply to
}

// WithProtection makes a PersistentNode's node protected (Curator's
// useProtection): its name gets Curator's "_c_<uuid>-" prefix, so that a
// create whose reply was lost still leaves exactly one node. The node keeps
// its name, prefix and (for a sequential mode) sequence number, whenever it
// is made again.
func WithProtection() Option {
	return option{"WithProtection", persistentNode, func(c *config) { c.protected = true }}
}

// WithTTL makes a PersistentNode of mode framework.Persistent or
// framework.PersistentSequential a TTL node (Curator's PERSISTENT_WITH_TTL,
// PERSISTENT_SEQUENTIAL_WITH_TTL with its ttl): the servers delete it once
// it has had no child and no change for ttl (see framework.WithTTL), and
// the PersistentNode makes it again while it runs. The servers must run
// with zookeeper.extendedTypesEnabled=true.
func WithTTL(ttl time.Duration) Option {
	return option{"WithTTL (a PersistentTtlNode takes its TTL as an argument)", persistentNode, func(c *config) { c.ttl = ttl }}
}

// WithoutParentCreation keeps a PersistentNode or a PersistentTtlNode from
// creating the missing parents of its node (Curator's useParentCreation
// false): without them it cannot make its node, says so
// (WaitForInitialCreate's error wraps zk.ErrNoNode), and tries again at
// the client's next reconnect.
func WithoutParentCreation() Option {
	return option{"WithoutParentCreation", persistentNode | persistentTTLNode, func(c *config) { c.noParents = true }}
}

// WithChildNodeName names a PersistentTtlNode's child, the node it touches
// (Curator's childNodeName; default "touch").
func WithChildNodeName(name string) Option {
	return option{"WithChildNodeName", persistentTTLNode, func(c *config) { c.childName = name }}
}

// WithTouchScheduleFactor sets how often a PersistentTtlNode touches its
// child: every ttl/factor (Curator's touchScheduleFactor; default 2).
func WithTouchScheduleFactor(factor int) Option {
	return option{"WithTouchScheduleFactor", persistentTTLNode, func(c *config) { c.touchFactor = factor }}
}

// The defaults of Curator's PersistentTtlNode.
const (
	// DefaultChildNodeName is the name of a PersistentTtlNode's child
	// (Curator's DEFAULT_CHILD_NODE_NAME).
	DefaultChildNodeName = "touch"
	// DefaultTouchScheduleFactor is how many times a PersistentTtlNode
	// touches its child per TTL (Curator's DEFAULT_TOUCH_SCHEDULE_FACTOR).
	DefaultTouchScheduleFactor = 2
)

// configOf applies opts for the constructor r, refusing those of the
// other.
func configOf(opts []Option, r recipe) (config, error) {
	c := config{recipe: r, childName: DefaultChildNodeName, touchFactor: DefaultTouchScheduleFactor}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if len(c.misplaced) > 0 {
		what := "PersistentNode"
		if r == persistentTTLNode {
			what = "PersistentTtlNode"
		}
		return c, errs.Errorf("%w: not options of a %s: %s", framework.ErrInvalidArgument, what, strings.Join(c.misplaced, ", "))
	}
	return c, nil
}

// checkTTL refuses a TTL the servers would refuse.
func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > framework.MaxTTL {
		return errs.Errorf("%w: TTL %v: must be from 1ms to %v", framework.ErrInvalidArgument, ttl, framework.MaxTTL)
	}
	return nil
}

// checkMode refuses a create mode that is not one of framework's, or one
// that cannot have the TTL asked for.
func checkMode(mode framework.CreateMode, ttl time.Duration) error {
	switch mode {
	case framework.Persistent, framework.PersistentSequential:
	case framework.Ephemeral, framework.EphemeralSequential, framework.Container:
		if ttl != 0 {
			return errs.Errorf("%w: TTL %v: only a Persistent or PersistentSequential node may have one", framework.ErrInvalidArgument, ttl)
		}
	default:
		return errs.Errorf("%w: create mode %d is none of framework's", framework.ErrInvalidArgument, int(mode))
	}
	if ttl != 0 {
		return checkTTL(ttl)
	}
	return nil
}
