package benchkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// WorkDir is where a benchmark works (its configs, logs and content) and
// what the user is told about it.
type WorkDir struct {
	Pattern string // os.MkdirTemp's
	Keep    bool   // keep it after the run (-keep); it is removed otherwise
	Holds   string // what it holds, for "HOLDS are in DIR"
	Hint    string // said when a failed run's directory is removed ("": nothing)
}

// Run is a benchmark's main after its flags: it runs bench in a fresh work
// directory with a context that Ctrl-C and SIGTERM cancel, prints bench's
// report (when there is one, also after an error) on stdout and its error on
// stderr, and returns the exit code.
func (w WorkDir) Run(bench func(ctx context.Context, dir string) (report string, err error)) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", w.Pattern)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	report, err := bench(ctx, dir)
	if report != "" {
		fmt.Println()
		fmt.Print(report)
	}
	if ctx.Err() != nil {
		err = errors.New("interrupted")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nbenchmark failed: %v\n", err)
	}
	if w.Keep {
		fmt.Fprintf(os.Stderr, "%s are in %s\n", w.Holds, dir)
	} else {
		_ = os.RemoveAll(dir)
		if err != nil && w.Hint != "" {
			fmt.Fprintln(os.Stderr, w.Hint)
		}
	}
	if err != nil {
		return 1
	}
	return 0
}
