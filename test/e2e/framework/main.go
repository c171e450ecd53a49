package framework

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
)

// Main is the TestMain of a suite on the local cluster: it starts the
// cluster with opts, hands it to use, runs the tests and tears the cluster
// down on success, failure, interrupt (Ctrl-C, SIGTERM) and before the
// -timeout would kill the binary. It returns the exit code. name prefixes
// its messages.
func Main(m *testing.M, name string, opts Options, use func(*Cluster)) int {
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "%s: the suite runs a local Kubernetes and needs root; `make test-unit` runs everything else\n", name)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		started  *Cluster
		stopOnce sync.Once
	)
	teardown := func() {
		stopOnce.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if err := started.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: teardown: %v\n", name, err)
			}
		})
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-signals
		fmt.Fprintf(os.Stderr, "%s: %v: tearing down\n", name, s)
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
				fmt.Fprintf(os.Stderr, "%s: the -timeout is 2 minutes away: tearing down\n", name)
				teardown()
				os.Exit(1)
			})
		}
	}

	c, err := StartWith(ctx, os.Stderr, opts)
	mu.Lock()
	started = c
	mu.Unlock()
	use(c)
	code := 1
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "%s: setting up the cluster: %v\n", name, err)
	case ctx.Err() != nil: // interrupted just as the start finished
	default:
		code = m.Run()
	}
	teardown()
	return code
}
