package lockqueue

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gocurator/curator/internal/locktree"
)

// Summary is a one-line account of the queue.
func (l *Listing) Summary() string {
	count := map[string]int{}
	for _, p := range l.Participants {
		count[p.Role]++
	}
	var what string
	switch l.Recipe {
	case RecipeMutex:
		what = "mutex (InterProcessMutex, or a LeaderSelector: the data is its participant id)"
	case RecipeLatch:
		what = "leader latch (LeaderLatch; the data is each candidate's participant id)"
	case RecipeReadWrite:
		what = "read-write lock (InterProcessReadWriteLock)"
	case RecipeSemaphore:
		what = "semaphore (InterProcessSemaphoreV2 / InterProcessSemaphoreMutex)"
		if l.MaxLeases > 0 {
			what += fmt.Sprintf(", limit %d", l.MaxLeases)
		}
	default: // RecipeNone
		switch {
		case !l.Exists:
			return fmt.Sprintf("%s: no participants (no node there: nobody has queued since the empty lock path was reaped, or the path is wrong)", l.Path)
		case l.Children == 1:
			return fmt.Sprintf("%s: no participants (its one child is no lock node)", l.Path)
		case l.Children > 1:
			return fmt.Sprintf("%s: no participants (none of its %d children is a lock node)", l.Path, l.Children)
		}
		return fmt.Sprintf("%s: no participants", l.Path)
	}
	if l.Recipe == RecipeSemaphore {
		lease, lock := map[string]int{}, map[string]int{}
		for _, p := range l.Participants {
			if p.Queue == locktree.SemaphoreLocks {
				lock[p.Role]++
			} else {
				lease[p.Role]++
			}
		}
		s := fmt.Sprintf("%s: %s; %d leases held", l.Path, what, lease[RoleHolder])
		if n := lease[RoleAcquiring]; n > 0 {
			s += fmt.Sprintf(", %d being counted", n)
		}
		if n := lease[RoleWaiting]; n > 0 {
			s += fmt.Sprintf(", %d waiting for a lease", n)
		}
		if n := lease[RoleForeign]; n > 0 {
			s += fmt.Sprintf(", %d foreign", n)
		}
		s += fmt.Sprintf("; internal lock: %d holder, %d waiting", lock[RoleHolder], lock[RoleWaiting])
		if n := lock[RoleBlocking] + lock[RoleForeign]; n > 0 {
			s += fmt.Sprintf(", %d foreign", n)
		}
		return s
	}
	parts := []string{fmt.Sprintf("%d holding", count[RoleHolder])}
	for _, r := range []string{RoleAcquiring, RoleWaiting, RoleBlocking, RoleForeign} {
		if count[r] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[r], r))
		}
	}
	return fmt.Sprintf("%s: %s; %s", l.Path, what, strings.Join(parts, ", "))
}

// WriteText prints l as `zklock ls` does: the summary, then a table,
// holders first, with ages as of now, then the warnings; for a parent of
// locks, each lock's.
func (l *Listing) WriteText(w io.Writer, now time.Time) error {
	return l.writeText(w, now, "AGE")
}

// WriteTextAsOf is WriteText for a listing that may be out of date: the
// ages are as of at, the last time the listing was known to be true, and
// their column says so ("AGE@15:04:05"), so that a node a stale listing
// still shows does not go on ageing.
func (l *Listing) WriteTextAsOf(w io.Writer, at time.Time) error {
	return l.writeText(w, at, "AGE@"+at.Format("15:04:05"))
}

// writeText is WriteText with the ages as of now under the heading age.
func (l *Listing) writeText(w io.Writer, now time.Time, age string) error {
	if l.Recipe == RecipeParent {
		return l.writeParent(w, now, age)
	}
	fmt.Fprintln(w, l.Summary())
	if len(l.Participants) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "POS\tROLE\tKIND\tSESSION\t%s\tDATA\tNODE\n", age)
		for _, p := range l.Participants {
			node := p.Node
			if p.Queue != "" {
				node = p.Queue + "/" + p.Node
			}
			if len(p.Notes) > 0 {
				node += "  (" + strings.Join(p.Notes, "; ") + ")"
			}
			session, data := p.Session, p.Data
			if session == "" {
				session = "-"
			}
			if data == "" {
				data = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Position, p.Role, p.Kind, session,
				FormatAge(now.Sub(p.Created)), data, node)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, wn := range l.Warnings {
		if wn.Node != "" {
			fmt.Fprintf(w, "warning: %s: %s\n", wn.Node, wn.Message)
		} else {
			fmt.Fprintf(w, "warning: %s\n", wn.Message)
		}
	}
	return nil
}

// writeParent prints a parent of locks: what it is, then each lock.
func (l *Listing) writeParent(w io.Writer, now time.Time, age string) error {
	if l.MoreLocks {
		fmt.Fprintf(w, "%s: not a lock, but a parent of locks; the first %d, looking %d levels down at most (there may be more: give a path further down):\n",
			l.Path, len(l.Locks), ParentDepth)
	} else {
		fmt.Fprintf(w, "%s: not a lock, but a parent of %d locks (looking %d levels down at most):\n", l.Path, len(l.Locks), ParentDepth)
	}
	for _, lock := range l.Locks {
		fmt.Fprintln(w)
		if err := lock.writeText(w, now, age); err != nil {
			return err
		}
	}
	return nil
}

// FormatAge renders d compactly: 850ms, 12.3s, 5m10s, 3h2m, 4d3h.
func FormatAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}
