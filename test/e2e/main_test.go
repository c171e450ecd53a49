//go:build e2e

// The end-to-end suite: the operator installed by its Helm chart on the local
// single-node cluster, serving real farms. Run with `make test-e2e` (root
// needed; part of `make test`). The cluster comes up once per run and is torn
// down on success, failure, interrupt (Ctrl-C, SIGTERM) and before the
// -timeout would kill the binary.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

var cluster *framework.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: the suite runs a local Kubernetes and needs root; `make test-unit` runs everything else")
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu       sync.Mutex
		started  *framework.Cluster
		stopOnce sync.Once
	)
	teardown := func() {
		stopOnce.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if err := started.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "e2e: teardown:", err)
			}
		})
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-signals
		fmt.Fprintf(os.Stderr, "e2e: %v: tearing down\n", s)
		cancel() // a start in progress fails and tears down on its own
		mu.Lock()
		running := started != nil
		mu.Unlock()
		if running {
			teardown()
			os.Exit(130)
		}
	}()
	if f := flag.Lookup("test.timeout"); f != nil {
		if timeout, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && timeout > 3*time.Minute {
			time.AfterFunc(timeout-2*time.Minute, func() {
				fmt.Fprintln(os.Stderr, "e2e: the -timeout is 2 minutes away: tearing down")
				teardown()
				os.Exit(1)
			})
		}
	}

	c, err := framework.Start(ctx, os.Stderr)
	mu.Lock()
	started, cluster = c, c
	mu.Unlock()
	code := 1
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "e2e: setting up the cluster:", err)
	case ctx.Err() != nil: // interrupted just as the start finished
	default:
		code = m.Run()
	}
	teardown()
	os.Exit(code)
}
