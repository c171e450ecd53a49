// Command cert-manager runs cert-manager's controller, webhook and cainjector
// from the public packages of the github.com/cert-manager/cert-manager module
// (its own main packages are separate modules that are not published), in one
// binary as hack/tools/kube does for Kubernetes: it runs the component named
// by the base name of argv[0] (cert-manager-controller,
// cert-manager-webhook, cert-manager-cainjector). It accepts the flags that
// cert-manager's Helm chart passes, so the chart installs it unchanged apart
// from its image values.
//
// What it leaves out, because it lives only in the module's internal/
// packages or pulls in every DNS provider's SDK:
//   - the ACME, Vault and Venafi issuers (SelfSigned and CA are built in);
//   - the webhook's resource validation (the CRDs' schemas still validate
//     every object; the webhook sets and guards CertificateRequest identity);
//   - configuration files (--config): every setting is a flag.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"
)

// components are the commands this binary runs, by the name it is run as.
var components = map[string]func(ctx context.Context, args []string) error{
	"cert-manager-controller": runController,
	"cert-manager-webhook":    runWebhook,
	"cert-manager-cainjector": runCAInjector,
}

func main() {
	name := filepath.Base(os.Args[0])
	run, ok := components[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: run me as one of %s (a link of that name)\n", name, strings.Join(componentNames(), ", "))
		os.Exit(2)
	}
	logf.InitLogs()
	ctrl.SetLogger(klog.NewKlogr())
	err := runUntilSignalled(run)
	if err != nil {
		klog.ErrorS(err, "exiting", "component", name)
	}
	logf.FlushLogs()
	if err != nil {
		os.Exit(1)
	}
}

// runUntilSignalled runs a component until it ends or SIGINT or SIGTERM
// (the kubelet stopping the pod) ends its context.
func runUntilSignalled(run func(context.Context, []string) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:])
}

func componentNames() []string {
	names := make([]string, 0, len(components))
	for n := range components {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// commonFlags are the flags every component takes: logging, feature gates
// and the (unsupported) configuration file.
type commonFlags struct {
	logging      *logsapi.LoggingConfiguration
	featureGates string
	configFile   string
}

func addCommonFlags(fs *pflag.FlagSet) *commonFlags {
	c := &commonFlags{logging: logsapi.NewLoggingConfiguration()}
	logf.AddFlags(c.logging, fs)
	fs.StringVar(&c.featureGates, "feature-gates", "", "comma-separated key=value pairs of cert-manager feature gates")
	fs.StringVar(&c.configFile, "config", "", "not supported: set every option with its flag")
	return c
}

// apply applies the logging options and feature gates once flags are parsed.
func (c *commonFlags) apply() error {
	if c.configFile != "" {
		return fmt.Errorf("--config=%s: configuration files are not supported by this build; set options with flags", c.configFile)
	}
	if err := logf.ValidateAndApply(c.logging); err != nil {
		return err
	}
	if c.featureGates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(c.featureGates); err != nil {
			return fmt.Errorf("--feature-gates: %w", err)
		}
	}
	return nil
}

// leaderElectionFlags are the chart's leader election flags (controller and
// cainjector).
type leaderElectionFlags struct {
	enabled                                   bool
	namespace                                 string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

func addLeaderElectionFlags(fs *pflag.FlagSet) *leaderElectionFlags {
	l := &leaderElectionFlags{}
	fs.BoolVar(&l.enabled, "leader-elect", true, "run only while holding the leader election lease")
	fs.StringVar(&l.namespace, "leader-election-namespace", "kube-system", "namespace of the leader election lease")
	fs.DurationVar(&l.leaseDuration, "leader-election-lease-duration", 60*time.Second, "how long non-leaders wait before taking the lease")
	fs.DurationVar(&l.renewDeadline, "leader-election-renew-deadline", 40*time.Second, "how long the leader retries renewing before giving up")
	fs.DurationVar(&l.retryPeriod, "leader-election-retry-period", 15*time.Second, "how long to wait between tries of an action")
	return l
}

// parse parses args, failing on positional arguments (no component takes any).
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}
