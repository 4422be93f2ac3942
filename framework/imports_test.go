package framework

import (
	"os/exec"
	"strings"
	"testing"
)

// The framework knows no locks: nothing it builds on is the recipes' or
// their tree format's (docs/ARCHITECTURE.md: nothing below recipes knows
// about locks). Its events are open to the packages built on it, which
// name their own kinds (NewEventKind) and details (EventDetail).
func TestFrameworkKnowsNoLocks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "/recipes") || strings.HasSuffix(p, "/internal/locktree") || strings.HasSuffix(p, "/internal/lockqueue") {
			t.Errorf("the framework depends on %s", p)
		}
	}
}
