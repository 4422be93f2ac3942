package curatorpeer

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// A peer started with a Wrapper runs under it, and its Pid is the JVM's.
func TestWrapper(t *testing.T) {
	testutil.CheckLeaks(t)
	p := start(t, Options{Wrapper: []string{"env", "CURATORPEER_WRAPPED=yes"}})
	if r, err := p.Call(testutil.Context(t), "-", "ping"); err != nil || r != "pong" {
		t.Fatalf("ping: %q, %v", r, err)
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/environ")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(p.Pid()) + "/exe")
	if !strings.Contains(string(env), "CURATORPEER_WRAPPED=yes\x00") || !strings.HasSuffix(exe, "/java") {
		t.Fatalf("pid %d (%s) is not the JVM run under the wrapper", p.Pid(), exe)
	}
}
