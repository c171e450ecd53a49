package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/healthz"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The controllers this build runs; each registers itself with
	// controller.Register. Issuers of other kinds (ACME, Vault, Venafi) are
	// not built in.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/ingresses"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// workersPerController is how many items each controller works on at once.
const workersPerController = 5

type controllerFlags struct {
	opts                           controller.ContextOptions
	controllers                    []string
	dns01NameserversOnly           bool
	metricsAddress, healthzAddress string
	healthzLeaderTimeout           time.Duration
}

func addControllerFlags(fs *pflag.FlagSet) *controllerFlags {
	f := &controllerFlags{}
	o := &f.opts
	fs.StringVar(&o.APIServerHost, "master", "", "address of the Kubernetes API server (default: in-cluster)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster)")
	fs.Float32Var(&o.KubernetesAPIQPS, "kube-api-qps", 20, "queries per second to the API server (without API priority and fairness)")
	fs.IntVar(&o.KubernetesAPIBurst, "kube-api-burst", 50, "burst of queries to the API server (without API priority and fairness)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace to watch (default: all)")
	fs.StringVar(&o.ClusterResourceNamespace, "cluster-resource-namespace", "kube-system", "namespace of the Secrets that ClusterIssuers refer to")
	fs.BoolVar(&o.ClusterIssuerAmbientCredentials, "cluster-issuer-ambient-credentials", true, "let ClusterIssuers use ambient credentials")
	fs.BoolVar(&o.IssuerAmbientCredentials, "issuer-ambient-credentials", false, "let Issuers use ambient credentials")
	fs.StringVar(&o.DefaultIssuerName, "default-issuer-name", "", "issuer of the ingress-shim's certificates without an issuer annotation")
	fs.StringVar(&o.DefaultIssuerKind, "default-issuer-kind", "Issuer", "kind of the default issuer")
	fs.StringVar(&o.DefaultIssuerGroup, "default-issuer-group", "cert-manager.io", "API group of the default issuer")
	fs.StringSliceVar(&o.DefaultAutoCertificateAnnotations, "auto-certificate-annotations", []string{"kubernetes.io/tls-acme"}, "Ingress annotations that ask for a certificate from the default issuer")
	fs.StringSliceVar(&o.ExtraCertificateAnnotations, "extra-certificate-annotations", nil, "Ingress annotations copied to the certificates it asks for")
	fs.BoolVar(&o.EnableOwnerRef, "enable-certificate-owner-ref", false, "make each Certificate the owner of its Secret")
	fs.StringSliceVar(&o.CopiedAnnotationPrefixes, "copied-annotation-prefixes",
		[]string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"}, "annotations copied from a Certificate to its CertificateRequests")
	fs.DurationVar(&o.CertificateRequestMinimumBackoffDuration, "certificate-request-minimum-backoff-duration", time.Hour, "first wait after a failed issuance")
	fs.DurationVar(&o.CertificateRequestMaximumBackoffDuration, "certificate-request-maximum-backoff-duration", 32*time.Hour, "longest wait after failed issuances")
	// ACME options: accepted as the chart passes them; this build has no ACME issuer.
	fs.StringVar(&o.HTTP01SolverImage, "acme-http01-solver-image", "", "ignored: this build has no ACME issuer")
	fs.StringToStringVar(&o.HTTP01SolverExtraLabels, "acme-http01-solver-extra-labels", nil, "ignored: this build has no ACME issuer")
	fs.StringVar(&o.HTTP01SolverRuntimeClassName, "acme-http01-solver-runtime-class-name", "", "ignored: this build has no ACME issuer")
	fs.StringSliceVar(&o.DNS01Nameservers, "dns01-recursive-nameservers", nil, "ignored: this build has no ACME issuer")
	fs.BoolVar(&f.dns01NameserversOnly, "dns01-recursive-nameservers-only", false, "ignored: this build has no ACME issuer")
	fs.IntVar(&o.MaxConcurrentChallenges, "max-concurrent-challenges", 60, "ignored: this build has no ACME issuer")
	fs.StringSliceVar(&f.controllers, "controllers", []string{"*"}, "controllers to run: '*' for all, 'name' to add one, '-name' to leave one out")
	fs.StringVar(&f.metricsAddress, "metrics-listen-address", "0.0.0.0:9402", "address of the Prometheus metrics endpoint")
	fs.StringVar(&f.healthzAddress, "healthz-listen-address", "0.0.0.0:9403", "address of the liveness endpoint (/livez)")
	fs.DurationVar(&f.healthzLeaderTimeout, "healthz-leader-election-timeout", 20*time.Second, "how long past the lease a lost leader election fails /livez")
	return f
}

func runController(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("cert-manager-controller", pflag.ContinueOnError)
	common := addCommonFlags(fs)
	election := addLeaderElectionFlags(fs)
	f := addControllerFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := common.apply(); err != nil {
		return err
	}
	enabled, err := enabledControllers(f.controllers, knownControllers())
	if err != nil {
		return err
	}
	f.opts.DNS01CheckAuthoritative = !f.dns01NameserversOnly
	solverDefaults(&f.opts.ACMEOptions)
	log := logf.Log.WithName("controller")
	ctx = logf.NewContext(ctx, log)

	factory, err := controller.NewContextFactory(ctx, f.opts)
	if err != nil {
		return err
	}
	shared, err := factory.Build("leader-election")
	if err != nil {
		return err
	}
	health := healthz.NewServer(f.healthzLeaderTimeout)
	g, ctx := errgroup.WithContext(ctx)
	healthzListener, err := net.Listen("tcp", f.healthzAddress)
	if err != nil {
		return err
	}
	g.Go(func() error { return health.Start(ctx, healthzListener) })

	run := func(ctx context.Context) error { return runControllers(ctx, factory, enabled, f.metricsAddress) }
	if !election.enabled {
		g.Go(func() error { return run(ctx) })
		return g.Wait()
	}
	g.Go(func() error {
		return leaderElect(ctx, election, shared.Client.CoordinationV1(), "cert-manager-controller", health.LeaderHealthzAdaptor, run)
	})
	return g.Wait()
}

// runControllers builds the enabled controllers, starts the informers they
// registered and the metrics endpoint, and runs them until ctx ends.
func runControllers(ctx context.Context, factory *controller.ContextFactory, enabled []string, metricsAddress string) error {
	log := logf.FromContext(ctx)
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range enabled {
		c, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		log.Info("starting controller", "controller", name)
		g.Go(func() error { return c.Run(workersPerController, ctx) })
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	if shared.GatewaySolverEnabled {
		shared.GWShared.Start(ctx.Done())
	}
	metricsListener, err := net.Listen("tcp", metricsAddress)
	if err != nil {
		return err
	}
	metrics := shared.Metrics.NewServer(metricsListener)
	g.Go(func() error { return serveUntilDone(ctx, metrics, metricsListener) })
	return g.Wait()
}

// serveUntilDone serves on l until ctx ends, then shuts the server down.
func serveUntilDone(ctx context.Context, s *http.Server, l net.Listener) error {
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(shutdown) //nolint:contextcheck // the run's context has ended
	}()
	if err := s.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// knownControllers are the registered controllers, sorted.
func knownControllers() []string {
	names := make([]string, 0, len(controller.Known()))
	for n := range controller.Known() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// enabledControllers applies the --controllers list to the known ones: '*'
// is every known controller, 'name' adds one, '-name' leaves one out.
func enabledControllers(spec, known []string) ([]string, error) {
	on := map[string]bool{}
	for _, item := range spec {
		name, off := strings.CutPrefix(item, "-")
		switch {
		case item == "*":
			for _, n := range known {
				on[n] = true
			}
		case !slices.Contains(known, name):
			return nil, fmt.Errorf("--controllers: unknown controller %q (this build has %s)", name, strings.Join(known, ", "))
		default:
			on[name] = !off
		}
	}
	var enabled []string
	for _, n := range known {
		if on[n] {
			enabled = append(enabled, n)
		}
	}
	return enabled, nil
}

// solverDefaults are the ACME HTTP-01 solver's resources, as cert-manager
// defaults them (unused: this build has no ACME issuer, but the options must
// be valid).
func solverDefaults(o *controller.ACMEOptions) {
	o.HTTP01SolverResourceRequestCPU = resource.MustParse("10m")
	o.HTTP01SolverResourceRequestMemory = resource.MustParse("64Mi")
	o.HTTP01SolverResourceLimitsCPU = resource.MustParse("100m")
	o.HTTP01SolverResourceLimitsMemory = resource.MustParse("64Mi")
	o.ACMEHTTP01SolverRunAsNonRoot = true
	o.DNS01CheckRetryPeriod = 10 * time.Second
}

// leaderElect runs run while holding the Lease name in the election's
// namespace; losing the lease ends it with an error (the pod restarts and
// campaigns again).
func leaderElect(ctx context.Context, f *leaderElectionFlags, client coordinationv1.CoordinationV1Interface, name string,
	watchdog *leaderelection.HealthzAdaptor, run func(context.Context) error) error {
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: f.namespace, Name: name},
		Client:     client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())},
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runErr error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: f.leaseDuration,
		RenewDeadline: f.renewDeadline,
		RetryPeriod:   f.retryPeriod,
		WatchDog:      watchdog,
		Name:          name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				runErr = run(ctx)
				cancel()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	elector.Run(ctx)
	if runErr != nil {
		return runErr
	}
	if parent.Err() != nil {
		return nil // shut down
	}
	return errors.New("lost the leader election lease")
}
