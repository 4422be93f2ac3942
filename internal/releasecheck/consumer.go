package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// consumerMain is the outside user's program: it builds a client with
// otelmetrics' two hooks and a mutex (no server is needed: New and the
// constructors do not connect first), and prints which versions of the
// gocurator modules it was built with, with their sums, and whether any is
// replaced.
const consumerMain = `package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/otelmetrics"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

func main() {
	metrics, err := otelmetrics.New(otel.GetMeterProvider())
	check(err)
	tracing, err := otelmetrics.NewTracing(otel.GetTracerProvider())
	check(err)
	client, err := framework.New("127.0.0.1:1", retry.NewExponentialBackoff(100*time.Millisecond, 1),
		framework.WithEventHook(metrics), framework.WithEventHook(tracing))
	check(err)
	_, err = recipes.NewInterProcessMutex(client, "/release-check")
	check(err)
	client.Close()
	info, ok := debug.ReadBuildInfo()
	if !ok {
		check(fmt.Errorf("no build info"))
	}
	for _, dep := range info.Deps {
		if strings.HasPrefix(dep.Path, "github.com/gocurator/") {
			fmt.Println("dep", dep.Path, dep.Version, dep.Sum, dep.Replace != nil)
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// writeConsumer makes the outside user's module in dir: a go.mod at goLine
// requiring the modules, its program, and a go.sum of the third-party sums
// (thirdPartySums).
func writeConsumer(dir, goLine string, sums [][]byte, mods ...*module) error {
	var gomod strings.Builder
	fmt.Fprintf(&gomod, "module example.com/consumer\n\ngo %s\n\nrequire (\n", goLine)
	for _, m := range mods {
		fmt.Fprintf(&gomod, "\t%s %s\n", m.path, m.version)
	}
	gomod.WriteString(")\n")
	for name, data := range map[string][]byte{
		"go.mod":  []byte(gomod.String()),
		"main.go": []byte(consumerMain),
		"go.sum":  thirdPartySums(sums),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// thirdPartySums is a go.sum of the lines of sums (the repository's
// go.sum files) but ours: the third-party sums they were verified with, so
// that a consumer needs no checksum database.
func thirdPartySums(sums [][]byte) []byte {
	seen := map[string]bool{}
	var gosum bytes.Buffer
	for _, s := range sums {
		for _, line := range lines(s) {
			if !seen[line] && !strings.HasPrefix(line, "github.com/gocurator/") {
				seen[line] = true
				gosum.WriteString(line + "\n")
			}
		}
	}
	return gosum.Bytes()
}

// checkBuilt checks what the consumer printed: each module at its version,
// with the sum of the zip served, not replaced.
func checkBuilt(out []byte, mods ...*module) error {
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[0] == "dep" {
			got[f[1]] = strings.Join(f[2:], " ")
		}
	}
	for _, m := range mods {
		if want := m.version + " " + m.sum() + " false"; got[m.path] != want {
			return fmt.Errorf("the consumer was built with %s %q, want %q (version, sum of the zip served, replaced)", m.path, got[m.path], want)
		}
	}
	return nil
}
