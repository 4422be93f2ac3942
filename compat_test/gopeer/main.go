// Command gopeer is the chaos suite's Go contender process: a
// compat_test/chaoscontender.Host driven by the line protocol of
// internal/curatorpeer (described in CuratorPeer.java) on its stdin and
// stdout, so that the suite can pause (SIGSTOP) a Go client as a whole
// process, as it pauses a Java peer. Its verbs are Host.Handle's and quit;
// its events "! ready" and the host's, "! state <client> <STATE> <µs>".
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gocurator/curator/compat_test/chaoscontender"
)

func main() {
	log, err := zap.NewDevelopment(zap.IncreaseLevel(zap.InfoLevel))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var outMu sync.Mutex
	emit := func(line string) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintln(os.Stdout, line)
	}
	h := chaoscontender.NewHost(log, func(ev string) { emit("! " + ev) })
	emit("! ready")
	// Requests until quit or the end of stdin; then every contender stops
	// and every client closes.
	var requests sync.WaitGroup
	for sc := bufio.NewScanner(os.Stdin); sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			emit("? bad request: " + sc.Text())
			continue
		}
		id, verb, args := f[0], f[2], f[3:]
		if verb == "quit" {
			emit(id + " ok bye")
			break
		}
		requests.Add(1)
		go func() {
			defer requests.Done()
			if reply, err := h.Handle(verb, args); err != nil {
				emit(id + " err " + strings.ReplaceAll(err.Error(), "\n", " "))
			} else {
				emit(id + " ok " + reply)
			}
		}()
	}
	h.Close()
	requests.Wait()
}
