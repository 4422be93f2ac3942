package framework

import (
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// DeleteLater deletes the node once its time has come, and its cancel
// reports whether it took the delete back: false once the delete has
// begun, true before, even when the timer has fired and its function has
// not yet taken the delete (the function then deletes nothing).
func TestDeleteLaterCancel(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	raw := testutil.Connect(t, server.Addr())

	now := base + "/now"
	if _, err := c.Create(ctx, now, nil); err != nil {
		t.Fatal(err)
	}
	cancel := c.DeleteLater(now, time.Now())
	testutil.WaitGone(t, raw, now)
	if cancel() {
		t.Fatal("cancel after the delete ran reported it taken back")
	}

	later := base + "/later"
	if _, err := c.Create(ctx, later, nil); err != nil {
		t.Fatal(err)
	}
	if !c.DeleteLater(later, time.Now().Add(time.Hour))() {
		t.Fatal("cancel before the time came did not take the delete back")
	}

	fired := base + "/fired"
	if _, err := c.Create(ctx, fired, nil); err != nil {
		t.Fatal(err)
	}
	cancel = c.DeleteLater(fired, time.Now().Add(time.Hour))
	var firing []*laterDelete
	c.later.mu.Lock()
	for d := range c.later.waiting {
		d.timer.Stop() // as if it had fired, and its function had not yet taken d
		firing = append(firing, d)
	}
	c.later.mu.Unlock()
	if !cancel() {
		t.Fatal("cancel that took the delete back as its timer fired reported it had not")
	}
	for _, d := range firing {
		if c.later.take(d) { // what the fired timer's function does next
			t.Fatal("the fired timer's function took a delete its cancel had taken back")
		}
	}
	for _, p := range []string{later, fired} {
		if ok, _, err := raw.Exists(p); err != nil || !ok {
			t.Fatalf("%s after its delete was taken back: exists %v, %v", p, ok, err)
		}
	}
}
