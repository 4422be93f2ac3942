package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/lockqueue"
)

// membersOptions are members' own flags.
type membersOptions struct {
	watch bool // redraw at every change
}

// membersFlags returns members' flag set, bound to o and g.
func membersFlags(g *globalOptions, o *membersOptions) *flag.FlagSet {
	fs := newFlagSet("members", "zklock members [--watch] [global flags] PATH", g)
	fs.BoolVar(&o.watch, "watch", false, "redraw the group at every change (ZooKeeper watches) until interrupted")
	return fs
}

// cmdMembers parses members' arguments, connects and lists the group at
// PATH (Curator's GroupMember: a child of PATH per member, named after its
// id, holding its data), once or (--watch) at every change.
func cmdMembers(ctx context.Context, g *globalOptions, args []string, s streams) error {
	var o membersOptions
	fs := membersFlags(g, &o)
	path, err := parseOnePath(fs, g, args, "PATH", "", false)
	if err != nil {
		return parseFailure(fs, s, err)
	}
	client, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	if o.watch {
		return watchListing(ctx, client, path, "members", func(ctx context.Context) (listing, error) {
			l, err := listMembers(ctx, client, path)
			if err != nil {
				return nil, err
			}
			return l, nil
		}, g.json, s.stdout)
	}
	l, err := listMembers(ctx, client, path)
	if err != nil {
		return err
	}
	if g.json {
		return writeJSONLine(s.stdout, l)
	}
	return l.WriteText(s.stdout, time.Now())
}

// groupListing is the group at a path as members lists it: its members,
// by id.
type groupListing struct {
	// Path is the membership path, as given (without the namespace).
	Path string `json:"path"`
	// Exists is false when there is no node at Path: no member has joined
	// since it was deleted (Curator makes it a container, which the
	// servers reap once empty), or the path is wrong.
	Exists bool `json:"exists"`
	// Members are Path's children, by id; empty, never nil.
	Members []groupMember `json:"members"`
}

// groupMember is a member of a group: a child of its path.
type groupMember struct {
	// ID is the member's id: its node's name.
	ID string `json:"id"`
	// Path is its node's path (without the namespace).
	Path string `json:"path"`
	// Session is the node's ephemeralOwner in hex: the member's session;
	// "" for a node that is not ephemeral, no GroupMember's.
	Session string `json:"session"`
	// Data is the member's data (a Curator GroupMember's payload, by
	// default its host's address): as text when it is printable UTF-8,
	// else "0x" and hex.
	Data string `json:"data"`
	// Created is the node's ctime (the server's clock): when the member
	// joined, or joined again in a new session.
	Created time.Time `json:"created"`
	// AgeMillis is the time since Created, by the local clock.
	AgeMillis int64 `json:"age_ms"`
	// Notes say more about the node (not ephemeral).
	Notes []string `json:"notes,omitempty"`
}

// listMembers reads the group at path: its children, each with its data
// and Stat; a child gone by the time it is read has left.
func listMembers(ctx context.Context, client *framework.Client, path string) (*groupListing, error) {
	l := &groupListing{Path: path, Members: []groupMember{}}
	names, _, err := client.Children(ctx, path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return l, nil
	case err != nil:
		return nil, err
	}
	l.Exists = true
	sort.Strings(names)
	for _, id := range names {
		p := framework.JoinPath(path, id)
		data, st, err := client.GetData(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m := groupMember{ID: id, Path: p, Data: lockqueue.ShowData(data), Created: time.UnixMilli(st.Ctime)}
		m.AgeMillis = max(0, time.Since(m.Created).Milliseconds())
		if st.EphemeralOwner != 0 {
			m.Session = fmt.Sprintf("0x%x", st.EphemeralOwner)
		} else {
			m.Notes = append(m.Notes, "not ephemeral: no GroupMember's node")
		}
		l.Members = append(l.Members, m)
	}
	return l, nil
}

// watched: the group's children are watched (its path), and each member's
// data.
func (l *groupListing) watched() (children, data []string) {
	for _, m := range l.Members {
		data = append(data, m.Path)
	}
	return nil, data
}

// membersLine is a listing of members --watch --json: the groupListing's
// fields, after the event and when the listing was the group.
type membersLine struct {
	Event    string    `json:"event"` // "listing"
	ListedAt time.Time `json:"listed_at"`
	*groupListing
}

func (l *groupListing) line(listedAt time.Time) any {
	return membersLine{Event: "listing", ListedAt: listedAt, groupListing: l}
}

// Summary is the listing's first line.
func (l *groupListing) Summary() string {
	switch {
	case !l.Exists:
		return fmt.Sprintf("%s: no such node (no member has joined since it was last empty, or the path is wrong)", l.Path)
	case len(l.Members) == 1:
		return fmt.Sprintf("%s: a group of 1 member", l.Path)
	}
	return fmt.Sprintf("%s: a group of %d members", l.Path, len(l.Members))
}

// WriteText prints l as members does: the summary, then a table of the
// members by id, with ages as of now.
func (l *groupListing) WriteText(w io.Writer, now time.Time) error {
	return l.writeText(w, now, "AGE")
}

// WriteTextAsOf is WriteText for a listing that may be out of date: the
// ages are as of at, and their column says so (as lockqueue's).
func (l *groupListing) WriteTextAsOf(w io.Writer, at time.Time) error {
	return l.writeText(w, at, "AGE@"+at.Format("15:04:05"))
}

func (l *groupListing) writeText(w io.Writer, now time.Time, age string) error {
	fmt.Fprintln(w, l.Summary())
	if len(l.Members) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ID\tSESSION\t%s\tDATA\n", age)
	for _, m := range l.Members {
		session, data := m.Session, m.Data
		if session == "" {
			session = "-"
		}
		if data == "" {
			data = "-"
		}
		if len(m.Notes) > 0 {
			data += "  (" + strings.Join(m.Notes, "; ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.ID, session, lockqueue.FormatAge(now.Sub(m.Created)), data)
	}
	return tw.Flush()
}
