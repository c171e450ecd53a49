// Command hosting is the shared-hosting scale benchmark of the operator as a
// Gateway API implementation: 20,000 HTTPRoutes (one host name each) in 200
// tenant namespaces attached to one Gateway, served by 10 shared pools. It
// runs a real kube-apiserver and etcd, the operator (bin/manager) as a
// separate process, and a real Envoy connected to the operator's xDS server
// as the farm's frontend, and measures how long the routes take to be
// Accepted and served against a bare client writing the same objects, how
// fast one route's change is served, and what the load costs Envoy and the
// operator. See bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// Targets the report checks (issue 27). Missing one is reported, not a failure.
const (
	targetRatio  = 2.0
	targetChange = time.Second
	targetRSS    = 512 << 20
)

type options struct {
	w                       workload
	mgr                     benchkit.ManagerFlags
	createWorkers           int
	changes                 int
	loadConns, envoyWorkers int
	loadDuration            time.Duration
	timeout, progress       time.Duration
	baseline                bool
	managerPath, envoyPath  string
	keep                    bool
}

func main() {
	var o options
	fs := flag.NewFlagSet("hosting", flag.ExitOnError)
	fs.IntVar(&o.w.routes, "routes", 20000, "HTTPRoutes, one host name each")
	fs.IntVar(&o.w.namespaces, "namespaces", 200, "tenant namespaces the routes are spread over")
	fs.IntVar(&o.w.pools, "pools", 10, "shared AppPools the routes are spread over")
	o.mgr.Register(fs, "the baseline client and the benchmark's own get", "")
	fs.IntVar(&o.createWorkers, "create-workers", 8, "routes created in parallel (the baseline's workers too)")
	fs.IntVar(&o.changes, "changes", 50, "route changes timed one after another")
	fs.IntVar(&o.loadConns, "load-connections", 16, "keep-alive connections of the requests/s measurement")
	fs.DurationVar(&o.loadDuration, "load-duration", 10*time.Second, "length of each requests/s measurement")
	fs.IntVar(&o.envoyWorkers, "envoy-concurrency", 2, "Envoy's worker threads")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "deadline for the bare client, and for the operator, to bring every route to Accepted and served; a run that misses it reports how far it got")
	fs.DurationVar(&o.progress, "progress", 10*time.Second, "interval of progress lines")
	fs.BoolVar(&o.baseline, "baseline", true, "measure the bare-client baseline first (on a control plane of its own)")
	fs.StringVar(&o.managerPath, "manager", "", "the manager binary (default: the repository's bin/manager; `make bench-hosting` builds it)")
	fs.StringVar(&o.envoyPath, "envoy", "", "the Envoy binary (default: the repository's bin/envoy; `make bench-hosting` installs it)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (kubeconfigs, logs, Envoy's config)")
	_ = fs.Parse(os.Args[1:])
	os.Exit(run(o))
}

func run(o options) int {
	if err := o.w.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	root, managerPath, err := benchkit.ManagerBinary(o.managerPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	o.managerPath = managerPath
	if o.envoyPath, err = benchkit.Binary(o.envoyPath, "envoy", filepath.Join(root, "bin"), "hack/install-tools.sh envoy"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// The benchmark's own controller-runtime pieces log errors only.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	wd := benchkit.WorkDir{Pattern: "webfarm-bench-hosting-", Keep: o.keep, Holds: "logs, kubeconfigs and Envoy's config",
		Hint: "run again with -keep to keep the manager's and Envoy's logs"}
	return wd.Run(func(ctx context.Context, dir string) (string, error) {
		rep := &report{o: o, machine: benchkit.Machine()}
		err := bench(ctx, o, dir, rep)
		if err == nil {
			err = rep.failures()
		}
		return rep.String(), err
	})
}

// logf prints a progress line.
func logf(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// bench runs the baseline and the operator; every process it starts is
// stopped before it returns, whether it succeeds, fails or is interrupted.
func bench(ctx context.Context, o options, dir string, rep *report) error {
	logf("workload: %d HTTPRoutes in %d namespaces on %d pools; work dir %s", o.w.routes, o.w.namespaces, o.w.pools, dir)
	if o.baseline {
		b, err := runBaseline(ctx, o, filepath.Join(dir, "baseline"))
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		rep.baseline = b
	}
	if err := runOperator(ctx, o, filepath.Join(dir, "operator"), rep); err != nil {
		return fmt.Errorf("operator run: %w", err)
	}
	return nil
}
