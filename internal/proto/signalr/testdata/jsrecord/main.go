// Command jsrecord records the requests the official JavaScript SignalR
// client makes through the Azure SignalR Service imitation
// (sigtest.Azure): its access token is accepted for a few requests, then
// refused. It serves the imitation on loopback, runs record.js with node
// for each HTTP transport and writes what the servers saw to
// ../jsclient_<transport>.txt. Not run by CI: see ../README.md.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
)

// tokenUses and restarts are the scenario the fixtures record; the test
// that compares stampede with them uses the same.
const (
	tokenUses = 6
	restarts  = 2
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jsrecord NODE_MODULES_DIR (a folder where npm install @microsoft/signalr@10 was run)")
		os.Exit(2)
	}
	for _, tr := range []string{"LongPolling", "ServerSentEvents"} {
		if err := record(os.Args[1], tr); err != nil {
			fmt.Fprintln(os.Stderr, tr+":", err)
			os.Exit(1)
		}
	}
}

func record(modules, transport string) error {
	a := &sigtest.Azure{
		Hub:       &sigtest.Hub{Transports: []string{transport}, PollHold: 100 * time.Millisecond},
		TokenUses: tokenUses,
		Record:    true,
	}
	a.Start()
	defer a.Close()
	os.Setenv("NODE_PATH", modules)
	cmd := exec.Command("node", "record.js", a.AppURL(), transport, fmt.Sprint(restarts))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	out := filepath.Join("..", "jsclient_"+transport+".txt")
	ver, _ := exec.Command("node", "-e", "console.log(require('@microsoft/signalr/package.json').version, process.version)").Output()
	head := fmt.Sprintf("# requests of @microsoft/signalr %s (node %s) through sigtest.Azure, tokens accepted for %d service requests;\n# written by testdata/jsrecord\n",
		strings.Fields(string(ver))[0], strings.Fields(string(ver))[1], tokenUses)
	return os.WriteFile(out, []byte(head+strings.Join(a.Requests(), "\n")+"\n"), 0o644)
}
