// Command manager runs the webfarm operator: the WebFarm, AppPool and
// CachePolicy controllers against the cluster in KUBECONFIG (or in-cluster).
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/cacheagent"
	"webfarm.dev/operator/internal/collect/autoscaler"
	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/operator"
	"webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/internal/xds"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cache-agent" {
		os.Exit(runCacheAgent(os.Args[2:]))
	}
	var (
		metricsAddr, probeAddr, xdsAddress, xdsBindAddress string
		leaderElect, secureMetrics                         bool
		leaderElectionNamespace                            string
		leaseDuration, renewDeadline, retryPeriod          time.Duration
		envoyImage, nginxImage, agentImage, pullPolicy     string
		concurrency                                        int
		apiQPS                                             float64
		apiBurst                                           int
		frontendStatsInterval, cpuMonitorInterval          time.Duration
		prometheusURL                                      string
		autoscale                                          autoscaler.Options
		activatorAddress                                   string
		watchNamespaces                                    []string
		activatorPort                                      int
		activationTimeout                                  time.Duration
		isolatePools                                       bool
		operatorNamespace, operatorPodLabels               string
		controlCASecret                                    string
		controlCertLifetime                                time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (\"0\" turns it off)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "serve the metrics endpoint over HTTPS to clients whose token may get its path (authenticated and authorised by the API server); false: plain HTTP to anyone")
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so that only one replica reconciles")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the operator's own)")
	flag.DurationVar(&leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a crashed leader's lease keeps the standbys waiting")
	flag.DurationVar(&renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew its lease (the API server away) before it stops leading and exits; below the lease duration")
	flag.DurationVar(&retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often the leader renews and the standbys try to take the lease")
	flag.StringVar(&envoyImage, "envoy-image", "localhost/webfarm-envoy:1.40.0", "image of the Envoy frontends")
	flag.StringVar(&nginxImage, "nginx-image", "localhost/webfarm-nginx:1.22.1", "image of the nginx workers and cache tiers")
	flag.StringVar(&agentImage, "cache-agent-image", "localhost/webfarm-operator:dev", "image of the agent beside each cache tier's nginx: the operator's own image")
	flag.StringVar(&pullPolicy, "image-pull-policy", "IfNotPresent", "pull policy of every generated container")
	flag.Func("watch-namespaces", "comma-separated namespaces whose farms, pools and cache policies the operator serves (default: all)", func(v string) error {
		for _, ns := range strings.Split(v, ",") {
			if ns = strings.TrimSpace(ns); ns != "" {
				watchNamespaces = append(watchNamespaces, ns)
			}
		}
		return nil
	})
	flag.StringVar(&xdsAddress, "xds-address", "webfarm-operator-xds.webfarm-system.svc:18000", "host:port where Envoy frontends reach the operator's xDS server")
	flag.StringVar(&xdsBindAddress, "xds-bind-address", ":18000", "address the xDS server listens on")
	flag.IntVar(&concurrency, "concurrency", 4, "reconciles in parallel per kind")
	flag.StringVar(&prometheusURL, "prometheus-url", "", "Prometheus server (scraping the kubelets' cAdvisor metrics and the Envoy frontends) for the CPU monitor and the autoscaler; empty turns both off")
	flag.DurationVar(&cpuMonitorInterval, "cpu-monitor-interval", 15*time.Second, "how often the CPU monitor reads the pools' CPU")
	flag.StringVar(&activatorAddress, "activator-bind-address", ":18081", "address the activator listens on (requests for pools without a ready worker that start on demand)")
	flag.IntVar(&activatorPort, "activator-port", 18081, "port of the activator on the --xds-address host, for the frontends (0: no activator; such requests get 503 at once)")
	flag.StringVar(&controlCASecret, "control-ca-secret", "webfarm-system/webfarm-operator-control-ca", "namespace/name of the Secret holding the CA of the frontends' control identities (created when absent; the only Secret the operator reads)")
	flag.DurationVar(&controlCertLifetime, "control-certificate-lifetime", 24*time.Hour, "lifetime of the frontends' identities and of the operator's serving certificate for xDS and the activator; each is renewed at two thirds of it (at least 1m)")
	flag.DurationVar(&activationTimeout, "activation-timeout", time.Minute, "how long the activator holds a request while its pool starts")
	flag.BoolVar(&isolatePools, "pool-network-policies", true, "give every pool and cache tier a NetworkPolicy that admits only its own farms' frontends and cache tiers, the operator's pods and the node (false: none; the operator deletes those it made)")
	flag.StringVar(&operatorNamespace, "operator-namespace", "webfarm-system", "namespace of the operator's pods, which the pools' and cache tiers' NetworkPolicies admit")
	flag.StringVar(&operatorPodLabels, "operator-pod-labels", "app.kubernetes.io/name=webfarm-operator,app.kubernetes.io/instance=webfarm-operator", "labels (k=v,...) of the operator's pods, which the pools' and cache tiers' NetworkPolicies admit")
	flag.DurationVar(&autoscale.Interval, "autoscale-interval", 15*time.Second, "how often the autoscaler measures the pools (autoscaled ones, and fixed ones for their capacity report) and the farms' frontends")
	flag.StringVar(&autoscale.RequestsQuery, "autoscale-requests-query", autoscaler.DefaultRequestsQuery, "Prometheus query (Go template of .Namespace and .Pool) of a pool's requests/s, one series per frontend pod labelled pod")
	flag.StringVar(&autoscale.CPUQuery, "autoscale-cpu-query", autoscaler.DefaultCPUQuery, "Prometheus query (Go template of .Namespace and .Pool, or .Farm for its frontends) of CPU cores used, one series per pod labelled pod")
	flag.StringVar(&autoscale.FrontendRequestsQuery, "frontend-requests-query", autoscaler.DefaultFrontendRequestsQuery, "Prometheus query (Go template of .Namespace and .Farm) of a farm's frontends' requests/s, one series per frontend pod labelled pod")
	flag.StringVar(&autoscale.FrontendHTTPSRequestsQuery, "frontend-https-requests-query", autoscaler.DefaultFrontendHTTPSRequestsQuery, "Prometheus query (Go template of .Namespace and .Farm) of the part of a farm's frontends' requests/s served over TLS, one series per frontend pod labelled pod")
	flag.Float64Var(&autoscale.DefaultNodeMHz, "default-node-mhz", autoscaler.DefaultNodeMHz, "clock rate (MHz) of a node without the "+vocabulary.NodeMHzLabel+" label")
	flag.DurationVar(&frontendStatsInterval, "frontend-stats-interval", 5*time.Second, "how often the leader reads the Envoy frontends' per-pool queue figures (0 turns it off)")
	flag.Float64Var(&apiQPS, "kube-api-qps", 50, "API requests per second the operator may send (sustained)")
	flag.IntVar(&apiBurst, "kube-api-burst", 100, "API requests the operator may send in a burst")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	platform, err := platformFrom(model.Images{Envoy: envoyImage, Nginx: nginxImage, CacheAgent: agentImage, PullPolicy: pullPolicy}, xdsAddress)
	if err == nil && (activatorPort < 0 || activatorPort > 65535 || activationTimeout <= 0) {
		err = fmt.Errorf("--activator-port %d must be 0-65535 and --activation-timeout %s positive", activatorPort, activationTimeout)
	}
	if err == nil {
		err = leaseTimingsValid(leaseDuration, renewDeadline, retryPeriod)
	}
	if err == nil {
		err = defaultNodeMHzValid(autoscale.DefaultNodeMHz)
	}
	if err == nil && isolatePools {
		platform.Isolation, err = isolation(operatorNamespace, operatorPodLabels)
	}
	var caKey types.NamespacedName
	if err == nil {
		caKey, err = controlCAValid(controlCASecret, controlCertLifetime)
	}
	if err != nil {
		log.Error(err, "invalid flags")
		os.Exit(2)
	}
	platform.ActivatorPort, platform.ActivationTimeout = int32(activatorPort), activationTimeout
	platform.ControlTLS = true
	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS, restConfig.Burst = float32(apiQPS), apiBurst
	authority, err := controlAuthority(restConfig, caKey, platform.XDSHost, controlCertLifetime)
	if err != nil {
		log.Error(err, "the control CA")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metricsOptions(metricsAddr, secureMetrics),
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "webfarm-operator.webfarm.dev",
		LeaderElectionNamespace: leaderElectionNamespace,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		// A leader that stops (a rolling upgrade, a deleted pod) frees the lease
		// at once instead of making the standby wait out its 15 s; safe because
		// the process exits as soon as the manager returns.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(watchNamespaces),
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	xdsServer := xds.NewServer(xdsBindAddress, authority.ServerTLS())
	if err := mgr.Add(xdsServer); err != nil {
		log.Error(err, "adding the xDS server")
		os.Exit(1)
	}
	options := operator.Options{
		Controllers:           controllers.ControllerOptions{MaxConcurrentReconciles: concurrency, XDS: xdsServer, ActivatorAddress: activatorAddress, Identity: authority},
		FrontendStatsInterval: frontendStatsInterval, CPUMonitorInterval: cpuMonitorInterval, Autoscale: autoscale,
	}
	if prometheusURL != "" {
		promClient, err := promapi.NewClient(promapi.Config{Address: prometheusURL})
		if err != nil {
			log.Error(err, "--prometheus-url")
			os.Exit(1)
		}
		options.Prometheus = promv1.NewAPI(promClient)
	}
	if err := operator.Setup(mgr, platform, options); err != nil {
		log.Error(err, "setting up the controllers and collectors")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "adding the readiness check")
		os.Exit(1)
	}
	log.Info("starting", "envoyImage", envoyImage, "nginxImage", nginxImage, "xdsAddress", xdsAddress, "watchNamespaces", watchNamespaces)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}

// leaseTimingsValid checks the leader election's timings as client-go's
// elector would, but at start-up with the flags' names: a renewal must be
// retried within its deadline, and the deadline must end before the lease does
// (or a standby could take the lease while the leader still leads).
func leaseTimingsValid(lease, renew, retry time.Duration) error {
	if retry <= 0 || float64(renew) <= 1.2*float64(retry) || lease <= renew {
		return fmt.Errorf("--leader-elect-retry-period %s, --leader-elect-renew-deadline %s and --leader-elect-lease-duration %s: want 0 < retry period, 1.2 x retry period < renew deadline < lease duration", retry, renew, lease)
	}
	return nil
}

// defaultNodeMHzValid checks the clock rate of unlabelled nodes at start-up:
// the frontends weigh workers by it even where the autoscaler does not run.
func defaultNodeMHzValid(mhz float64) error {
	if !(mhz > 0) || math.IsInf(mhz, 0) {
		return fmt.Errorf("--default-node-mhz %v: want a positive number of MHz", mhz)
	}
	return nil
}

// isolation is what the pools' NetworkPolicies admit of the operator: its
// pods, by namespace and labels; both must name something, or the policies
// would shut out the activator and the collectors.
func isolation(namespace, podLabels string) (*model.Isolation, error) {
	set, err := labels.ConvertSelectorToLabelsMap(podLabels)
	switch {
	case err != nil:
		return nil, fmt.Errorf("--operator-pod-labels %q: %w", podLabels, err)
	case len(set) == 0:
		return nil, fmt.Errorf("--operator-pod-labels is empty: with --pool-network-policies it must select the operator's pods")
	case len(validation.IsDNS1123Label(namespace)) > 0:
		return nil, fmt.Errorf("--operator-namespace %q: want a namespace's name", namespace)
	}
	return &model.Isolation{OperatorNamespace: namespace, OperatorPodLabels: set}, nil
}

// controlCAValid reads --control-ca-secret (namespace/name) and checks
// --control-certificate-lifetime at start-up.
func controlCAValid(secret string, lifetime time.Duration) (types.NamespacedName, error) {
	namespace, name, ok := strings.Cut(secret, "/")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, fmt.Errorf("--control-ca-secret %q: want namespace/name", secret)
	}
	if lifetime < time.Minute {
		return types.NamespacedName{}, fmt.Errorf("--control-certificate-lifetime %s: want 1m or more", lifetime)
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, nil
}

// controlAuthority loads (or creates) the control CA with a client of its
// own, uncached: the manager's cache must hold no Secret.
func controlAuthority(config *rest.Config, caKey types.NamespacedName, serverName string, lifetime time.Duration) (*identity.Authority, error) {
	c, err := client.New(config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ca, err := identity.LoadOrCreateCA(ctx, c, caKey, time.Now())
	if err != nil {
		return nil, err
	}
	return identity.NewAuthority(ca, []string{serverName}, lifetime, time.Now)
}

// metricsOptions serves the metrics (and extra handlers). Secure: HTTPS with
// a self-signed certificate, and each request's bearer token checked with a
// TokenReview and a SubjectAccessReview of its path (verb get on the
// non-resource URL), as Kubernetes' own components do.
func metricsOptions(address string, secure bool) metricsserver.Options {
	o := metricsserver.Options{BindAddress: address, SecureServing: secure}
	if secure {
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

func platformFrom(images model.Images, xdsAddress string) (model.Platform, error) {
	host, portText, err := net.SplitHostPort(xdsAddress)
	if err != nil {
		return model.Platform{}, fmt.Errorf("--xds-address %q: %w", xdsAddress, err)
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil || port < 1 || port > 65535 {
		return model.Platform{}, fmt.Errorf("--xds-address %q: port must be 1-65535", xdsAddress)
	}
	switch corev1.PullPolicy(images.PullPolicy) {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return model.Platform{}, fmt.Errorf("--image-pull-policy %q: want Always, IfNotPresent or Never", images.PullPolicy)
	}
	return model.Platform{
		Images:  images,
		XDSHost: host,
		XDSPort: int32(port),
	}, nil
}

// runCacheAgent runs the agent beside a cache tier's nginx: "manager
// cache-agent --config FILE".
func runCacheAgent(args []string) int {
	fs := flag.NewFlagSet("cache-agent", flag.ExitOnError)
	config := fs.String("config", "/etc/webfarm/"+vocabulary.AgentConfigFile, "the agent's configuration, rendered by the operator")
	_ = fs.Parse(args)
	if err := cacheagent.Main(ctrl.SetupSignalHandler(), *config); err != nil {
		fmt.Fprintln(os.Stderr, "cache-agent:", err)
		return 1
	}
	return 0
}
