package framework

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/state"
)

// The tests' own kinds of events, as a package built on the client makes
// them: one that begins something (DEBUG, droppable), one that ends it
// (INFO, never dropped).
var (
	testBegan = NewEventKind("began", zapcore.DebugLevel)
	testEnded = NewEndEventKind("ended", zapcore.InfoLevel)
)

// testDetail is a detail of the tests' events: what it is of, and the wait
// an ended event measures.
type testDetail struct{ of string }

func (d testDetail) EachField(e Event, f func(key string, value any)) {
	f("of", d.of)
	if e.Kind == testEnded {
		f("wait", e.Wait)
	}
}

// An event prints only the fields that apply to its kind, as text (String,
// so fmt's verbs too) and as a zap object: a package's event shows its
// detail's fields and never a connection state (NOT_CONNECTED is the zero
// one), a state change never a wait; a field of the kind's that is zero
// (a wait 0) does.
func TestEventPrintsOnlyWhatApplies(t *testing.T) {
	for _, c := range []struct {
		e         Event
		want      string
		keys      []string
		forbidden []string
	}{
		{
			e:         Event{Kind: testEnded, Path: "/locks/a", Node: "/locks/a/_c_x-lock-0000000001", Session: 0x1f, Detail: testDetail{"mutex"}},
			want:      "ended path=/locks/a node=/locks/a/_c_x-lock-0000000001 session=0x1f of=mutex wait=0s",
			keys:      []string{"kind", "of", "path", "node", "session", "wait"},
			forbidden: []string{"state", "hold", "op", "retry", "error"},
		},
		{
			e:         Event{Kind: testBegan, Path: "/locks/a", Wait: time.Second, Detail: testDetail{"read"}, Err: errors.New("gocurator: acquire: context deadline exceeded")},
			want:      `began path=/locks/a of=read error="gocurator: acquire: context deadline exceeded"`,
			keys:      []string{"kind", "of", "path", "error"},
			forbidden: []string{"state", "wait", "hold"},
		},
		{
			e:         Event{Kind: StateChanged, State: state.Suspended, Session: 0x2a},
			want:      "state-changed session=0x2a state=SUSPENDED",
			keys:      []string{"kind", "session", "state"},
			forbidden: []string{"wait", "of", "path"},
		},
	} {
		for _, got := range []string{c.e.String(), fmt.Sprint(c.e), fmt.Sprintf("%v", c.e)} {
			if got != c.want {
				t.Errorf("printed\n got %s\nwant %s", got, c.want)
			}
		}
		core, logs := observer.New(zapcore.DebugLevel)
		zap.New(core).Info("x", zap.Any("event", c.e))
		fields, _ := logs.All()[0].ContextMap()["event"].(map[string]any)
		for _, k := range c.keys {
			if _, ok := fields[k]; !ok {
				t.Errorf("%s: zap object %v has no %s", c.e.Kind, fields, k)
			}
		}
		for _, f := range c.forbidden {
			if _, ok := fields[f]; ok {
				t.Errorf("%s: zap object %v has %s, which does not apply", c.e.Kind, fields, f)
			}
		}
		if printed := c.e.String() + fmt.Sprint(fields); c.e.Kind != StateChanged && strings.Contains(printed, "NOT_CONNECTED") {
			t.Errorf("%s: printed a connection state: %s", c.e.Kind, printed)
		}
	}
}
