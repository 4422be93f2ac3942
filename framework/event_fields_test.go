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

// An event prints only the fields that apply to its kind, as text (String,
// so fmt's verbs too) and as a zap object: a lock event never shows a
// connection state (NOT_CONNECTED is the zero one), a state change never a
// wait; a field of the kind's that is zero (a position 0) does.
func TestEventPrintsOnlyWhatApplies(t *testing.T) {
	for _, c := range []struct {
		e         Event
		want      string
		keys      []string
		forbidden []string
	}{
		{
			e:         Event{Kind: Acquired, Recipe: "mutex", Path: "/locks/a", Node: "/locks/a/_c_x-lock-0000000001", Session: 0x1f, Wait: 3 * time.Millisecond},
			want:      "acquired recipe=mutex path=/locks/a node=/locks/a/_c_x-lock-0000000001 session=0x1f position=0 wait=3ms",
			keys:      []string{"kind", "recipe", "path", "node", "session", "position", "wait"},
			forbidden: []string{"state", "hold", "op", "retry", "error"},
		},
		{
			e:         Event{Kind: AcquireFailed, Recipe: "read", Path: "/locks/a", Wait: time.Second, Err: errors.New("gocurator: acquire: context deadline exceeded")},
			want:      `acquire-failed recipe=read path=/locks/a wait=1s error="gocurator: acquire: context deadline exceeded"`,
			keys:      []string{"kind", "recipe", "path", "wait", "error"},
			forbidden: []string{"state", "position", "hold"},
		},
		{
			e:         Event{Kind: StateChanged, State: state.Suspended, Session: 0x2a},
			want:      "state-changed session=0x2a state=SUSPENDED",
			keys:      []string{"kind", "session", "state"},
			forbidden: []string{"wait", "position", "recipe", "path"},
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
