// Command controlplane is the operator's control-plane scale benchmark: it
// starts a real kube-apiserver and etcd, creates the IIS 6 headline workload
// (2,000 application pools, 20,000 site host names) and measures how long the
// operator (bin/manager, a separate process) takes to bring every object to
// Ready, against a bare client that creates the same child objects. See
// bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/scheme"
)

// Targets the report checks. Missing one is reported, not a failure.
const (
	targetRatio = 2.0
	targetRSS   = 512 << 20
)

// The manager's default platform (its flags' defaults): the baseline renders
// with the same images and xDS address, so both runs make identical objects.
var platform = model.Platform{
	Images:  model.Images{Envoy: "localhost/webfarm-envoy:1.40.0", Nginx: "localhost/webfarm-nginx:1.22.1", CacheAgent: "localhost/webfarm-operator:dev", PullPolicy: "IfNotPresent"},
	XDSHost: "webfarm-operator-xds.webfarm-system.svc",
	XDSPort: 18000,
}

type options struct {
	w                        workload
	mgr                      benchkit.ManagerFlags
	clientQPS                float64
	clientBurst              int
	createWorkers            int
	statusWorkers            int
	timeout, progress        time.Duration
	idleTimeout              time.Duration
	baseline                 bool
	managerPath, serviceCIDR string
	workDir                  string
	keep                     bool
	root                     string
	baselineNS, operatorNS   string
	readyPoll                time.Duration
	managerStartTimeout      time.Duration
	managerStopGrace         time.Duration
}

func main() {
	os.Exit(run())
}

func run() int {
	var o options
	fs := flag.NewFlagSet("controlplane", flag.ExitOnError)
	fs.IntVar(&o.w.farms, "farms", 40, "WebFarms (each with its own CachePolicy)")
	fs.IntVar(&o.w.poolsPerFarm, "pools-per-farm", 50, "sites per farm, each routed to its own AppPool (max 500)")
	fs.IntVar(&o.w.hostsPerSite, "hosts-per-site", 10, "host names per site (max 100)")
	o.mgr.Register(fs, "the baseline client gets", "(reconciles in parallel per kind); the baseline's workers")
	fs.Float64Var(&o.clientQPS, "client-qps", 1000, "QPS of the benchmark's own client (creating the custom resources, writing Deployment status)")
	fs.IntVar(&o.clientBurst, "client-burst", 2000, "burst of the benchmark's own client")
	fs.IntVar(&o.createWorkers, "create-workers", 8, "custom resources created in parallel")
	fs.IntVar(&o.statusWorkers, "status-workers", 8, "Deployment statuses written in parallel (the stand-in Deployment controller)")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "deadline for every object to be Ready")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 5*time.Minute, "after Ready, how long to wait for the manager's work queues to empty (0: do not wait)")
	fs.DurationVar(&o.progress, "progress", 10*time.Second, "interval of progress lines")
	fs.BoolVar(&o.baseline, "baseline", true, "measure the bare-client baseline first (on a control plane of its own)")
	fs.StringVar(&o.managerPath, "manager", "", "the manager binary (default: bin/manager of the repository; `make bench-control-plane` builds it)")
	fs.StringVar(&o.serviceCIDR, "service-cidr", "10.0.0.0/16", "the API server's --service-cluster-ip-range; every pool, farm and cache tier has a ClusterIP Service")
	fs.StringVar(&o.workDir, "workdir", "", "where kubeconfigs and logs go (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (it is always kept when the run fails)")
	_ = fs.Parse(os.Args[1:])
	// One namespace name for both runs (each has its own control plane): the
	// frontend's Envoy node cluster is "<namespace>/<farm>", so the rendered
	// objects are identical only in a namespace of the same name.
	o.baselineNS, o.operatorNS = "webfarm-bench", "webfarm-bench"
	o.readyPoll = 100 * time.Millisecond
	o.managerStartTimeout = time.Minute
	// Longer than the manager's own graceful-shutdown limit (controller-runtime's
	// default, 30 s), so that the manager ends by itself if it can.
	o.managerStopGrace = 45 * time.Second

	if err := o.w.validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var err error
	if o.root, o.managerPath, err = benchkit.ManagerBinary(o.managerPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if o.workDir == "" {
		if o.workDir, err = os.MkdirTemp("", "webfarm-bench-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}

	// The benchmark's own controller-runtime pieces log errors only.
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep, err := bench(ctx, o)
	fmt.Println()
	fmt.Print(rep.table())
	ok := err == nil && rep.converged
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "\nbenchmark failed: %v\n", err)
	case !rep.converged:
		fmt.Fprintf(os.Stderr, "\nnot every object was Ready within %s\n", o.timeout)
	}
	if ok && !o.keep {
		_ = os.RemoveAll(o.workDir)
	} else {
		fmt.Fprintf(os.Stderr, "logs and kubeconfigs are in %s\n", o.workDir)
	}
	if !ok {
		return 1
	}
	return 0
}

// logf prints a progress line.
func logf(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// bench runs the baseline and the operator; every process it starts is
// stopped before it returns, whether it succeeds, fails or is interrupted.
func bench(ctx context.Context, o options) (*report, error) {
	rep := &report{o: o, start: time.Now()}
	logf("workload: %d farms x %d sites x %d hosts = %d AppPools, %d host names, %d CachePolicies; work dir %s",
		o.w.farms, o.w.poolsPerFarm, o.w.hostsPerSite, o.w.poolCount(), o.w.hostCount(), o.w.farms, o.workDir)
	if o.baseline {
		if err := runBaselinePhase(ctx, o, rep); err != nil {
			return rep, fmt.Errorf("baseline: %w", err)
		}
	}
	if err := runOperatorPhase(ctx, o, rep); err != nil {
		return rep, fmt.Errorf("operator run: %w", err)
	}
	rep.wall = time.Since(rep.start)
	if rep.converged {
		// Until every object is Ready the operator may not have made them all.
		return rep, compareChildCounts(o.w.childCount(), rep.operatorChildren, rep.baselineChildren)
	}
	return rep, nil
}

func runBaselinePhase(ctx context.Context, o options, rep *report) (err error) {
	logf("baseline: starting a control plane of its own")
	cp, err := startControlPlane(o.root, filepath.Join(o.workDir, "baseline"), o.serviceCIDR)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cp.stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", stopErr)
		}
	}()
	c, err := benchClient(cp.config, o)
	if err != nil {
		return err
	}
	if err := createNamespace(ctx, c, o.baselineNS, o.w); err != nil {
		return err
	}
	procs := childProcesses("kube-apiserver", "etcd")
	procs["benchmark"] = os.Getpid()
	apiBefore, _ := scrapeAPIServer(ctx, cp.config, "")
	cpuBefore := takeCPU(procs)
	logf("baseline: applying %d child objects with %d workers, client qps %g burst %d", o.w.childCount(), o.mgr.Concurrency, o.mgr.QPS, o.mgr.Burst)
	res, err := runBaseline(ctx, cp.config, o.w, o.baselineNS, o.mgr.QPS, o.mgr.Burst, o.mgr.Concurrency, platform)
	if err != nil {
		return err
	}
	rep.baseline = &res
	rep.baselineCPU = diffCPU(cpuBefore, takeCPU(procs))
	if apiAfter, err := scrapeAPIServer(ctx, cp.config, filepath.Join(o.workDir, "baseline", "kube-apiserver-metrics.txt")); err == nil && apiBefore != nil {
		rep.baselineAPI = apiDiff(apiBefore, apiAfter)
	}
	if rep.baselineChildren, err = countChildren(ctx, c, o.baselineNS); err != nil {
		return err
	}
	logf("baseline: %d objects in %s", res.applied, res.wall.Round(time.Millisecond))
	// Before the operator's run: a baseline that misses objects is no baseline.
	if res.applied != o.w.childCount() {
		return fmt.Errorf("applied %s child objects, the renderers make %s for this workload", num(res.applied), num(o.w.childCount()))
	}
	return compareChildCounts(o.w.childCount(), nil, rep.baselineChildren)
}

func runOperatorPhase(ctx context.Context, o options, rep *report) (err error) {
	logf("operator: starting a control plane")
	cp, err := startControlPlane(o.root, filepath.Join(o.workDir, "operator"), o.serviceCIDR)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := cp.stop(); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the control plane: %w", stopErr)
		}
	}()
	procs := childProcesses("kube-apiserver", "etcd")
	procs["benchmark"] = os.Getpid()
	c, err := benchClient(cp.config, o)
	if err != nil {
		return err
	}
	if err := createNamespace(ctx, c, o.operatorNS, o.w); err != nil {
		return err
	}

	logf("operator: starting %s (qps %g, burst %d, concurrency %d) against %s", o.managerPath, o.mgr.QPS, o.mgr.Burst, o.mgr.Concurrency, cp.kubeconfig)
	mgr, err := startManager(o.managerPath, cp.kubeconfig, filepath.Join(o.workDir, "operator", "manager.log"), o.mgr)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := mgr.Stop(o.managerStopGrace); stopErr != nil && err == nil {
			err = fmt.Errorf("stopping the manager: %w", stopErr)
		}
	}()
	procs["manager"] = mgr.PID()
	if err := mgr.WaitReady(ctx, o.managerStartTimeout); err != nil {
		return fmt.Errorf("waiting for the manager's /readyz: %w", err)
	}
	obs, err := startObserver(ctx, clientConfig(cp.config, o), o.operatorNS, o.statusWorkers)
	if err != nil {
		return err
	}
	defer obs.stop()

	for _, content := range o.w.contents(o.operatorNS) {
		if err := c.Create(ctx, content); err != nil {
			return fmt.Errorf("creating the pools' content %s: %w", content.Name, err)
		}
	}
	apiBefore, _ := scrapeAPIServer(ctx, cp.config, "")
	cpuBefore := takeCPU(procs)
	parents := o.w.parents(o.operatorNS)
	logf("operator: creating %d custom resources (%d workers), then waiting for every one to be Ready (deadline %s)", len(parents), o.createWorkers, o.timeout)
	start := time.Now()
	created := make(chan error, 1)
	createCtx, stopCreating := context.WithCancel(ctx)
	defer stopCreating() // when the run ends early (deadline, error)
	go func() {
		created <- parallel(createCtx, o.createWorkers, len(parents), func(ctx context.Context, i int) error {
			obj := parents[i].DeepCopyObject().(client.Object)
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
			}
			return nil
		})
	}()

	deadline := time.NewTimer(o.timeout)
	defer deadline.Stop()
	poll := time.NewTicker(o.readyPoll)
	defer poll.Stop()
	progress := time.NewTicker(o.progress)
	defer progress.Stop()
	var r readiness
	timedOut := false
	for !rep.converged && !timedOut {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-created:
			if err != nil {
				return err
			}
			rep.createTime = time.Since(start)
			logf("operator: %d custom resources created in %s", len(parents), rep.createTime.Round(time.Millisecond))
		case <-deadline.C:
			// Measure all the same: where a run stalls is worth knowing.
			logf("operator: deadline passed; %s", r)
			rep.final, rep.readyTime, timedOut = r, time.Since(start), true
		case <-progress.C:
			rss, _ := statusBytes(mgr.PID(), "VmRSS")
			logf("operator: %s after %s; Deployments seen %d, statuses written %d; manager RSS %d MiB",
				r, time.Since(start).Round(time.Second), obs.marker.seen.Load(), obs.marker.marked.Load(), rss>>20)
		case <-poll.C:
			if err := mgr.Running(); err != nil {
				return err
			}
			if r, err = countReady(ctx, obs.mgr.GetCache(), o.operatorNS); err != nil {
				return err
			}
			elapsed := time.Since(start)
			rep.notePartial(r, o.w, elapsed)
			if r.all(o.w) && rep.createTime > 0 {
				rep.converged, rep.readyTime, rep.final = true, elapsed, r
			}
		}
	}
	if rep.converged {
		logf("operator: every object Ready after %s", rep.readyTime.Round(time.Millisecond))
	}

	// Measure before anything else runs: metrics, memory, CPU.
	rep.managerMetrics, err = scrapeHTTP(ctx, "http://"+mgr.metricsAddr+"/metrics", filepath.Join(o.workDir, "operator", "manager-metrics.txt"))
	if err != nil {
		return fmt.Errorf("scraping the manager's metrics: %w", err)
	}
	if rep.peakRSS, err = statusBytes(mgr.PID(), "VmHWM"); err != nil {
		return err
	}
	rep.operatorCPU = diffCPU(cpuBefore, takeCPU(procs))
	if apiAfter, err := scrapeAPIServer(ctx, cp.config, filepath.Join(o.workDir, "operator", "kube-apiserver-metrics.txt")); err == nil && apiBefore != nil {
		rep.operatorAPI = apiDiff(apiBefore, apiAfter)
	}
	rep.deploymentsMarked = obs.marker.marked.Load()
	if rep.operatorChildren, err = countChildren(ctx, c, o.operatorNS); err != nil {
		return err
	}
	if !rep.converged {
		return nil // the manager is stopped by the deferred stop
	}
	rep.sameObjects, rep.sameObjectsNote = compareRendering(ctx, c, o, rep.baseline)

	// Does the operator go quiet once everything is Ready, and how much work
	// did it still do after that point?
	if o.idleTimeout > 0 {
		logf("operator: waiting for the manager's work queues to empty")
		s, err := mgr.waitIdle(ctx, o.idleTimeout)
		if err != nil {
			logf("operator: the manager did not become idle: %v", err)
		} else {
			rep.idleTime, rep.idleMetrics = time.Since(start), s
			logf("operator: idle after %s", rep.idleTime.Round(time.Millisecond))
		}
	}
	stopStart := time.Now()
	if err := mgr.Stop(o.managerStopGrace); err != nil {
		return fmt.Errorf("stopping the manager: %w", err)
	}
	rep.stopTime = time.Since(stopStart)
	return nil
}

// createNamespace creates the namespace of a run and checks, with a dry run,
// that the API server accepts a farm of the workload's shape: the CRD's
// validation rules have a cost limit, and a refusal is better found now than
// after the baseline.
func createNamespace(ctx context.Context, c client.Client, ns string, w workload) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	farm := w.webFarms(ns)[0]
	if err := c.Create(ctx, farm, client.DryRunAll); err != nil {
		return fmt.Errorf("the API server refuses a farm of %d sites x %d host names (%d host names): %w",
			w.poolsPerFarm, w.hostsPerSite, w.poolsPerFarm*w.hostsPerSite, err)
	}
	return nil
}

// benchClient is the benchmark's own direct client.
func benchClient(cfg *rest.Config, o options) (client.Client, error) {
	return client.New(clientConfig(cfg, o), client.Options{Scheme: scheme.New()})
}

func clientConfig(cfg *rest.Config, o options) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(o.clientQPS), o.clientBurst
	return cfg
}

// machine describes the host the benchmark ran on.
func machine() string {
	cpuModel := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpuModel = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				if _, err := fmt.Sscan(strings.TrimSpace(v), &kb); err == nil {
					mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
				}
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s)%s, %s/%s, %s", runtime.NumCPU(), cpuModel, mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
