package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/collect/autoscaler"
	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/operator"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/xds"
)

// The suite shares one real API server and one running operator.
var (
	// xdsServer is the running operator's xDS server (routing snapshots).
	xdsServer *xds.Server
	cfg       *rest.Config
	k8sClient client.Client
	// operatorClient is the running operator's client: it reads from the
	// operator's cache.
	operatorClient client.Client
	platform       = model.Platform{
		Images:  model.Images{Envoy: "localhost/webfarm-envoy:1.40.0", Nginx: "localhost/webfarm-nginx:1.22.1", CacheAgent: "localhost/webfarm-operator:dev", PullPolicy: "IfNotPresent"},
		XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000, ControlTLS: true,
		// As the operator runs by default: every pool and tier isolated.
		Isolation: &model.Isolation{OperatorNamespace: "webfarm-system", OperatorPodLabels: map[string]string{"app.kubernetes.io/name": "webfarm-operator"}},
	}
	namespaceCounter atomic.Int32
	// promStub answers the running operator's Prometheus queries as each
	// test sets them (by the test's namespace).
	promStub *testutil.PromStub
	// kubeconfigPath lets the real kubectl reach the test control plane.
	kubeconfigPath string
	// operatorClock is the time the running operator's pool decisions
	// read: the real time, which a test may move forward.
	operatorClock = &steppingClock{}
)

// steppingClock is the real clock plus an offset a test adds to.
type steppingClock struct{ offset atomic.Int64 }

func (c *steppingClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// step moves the clock forward for the rest of the test.
func (c *steppingClock) step(t *testing.T, d time.Duration) {
	t.Helper()
	if c.offset.Add(int64(d)) == int64(d) {
		t.Cleanup(func() { c.offset.Store(0) })
	}
}

const timeout = 20 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	cp, err := testutil.StartControlPlane()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test control plane:", err)
		}
	}()
	cfg = cp.Config
	kubeconfig, err := cp.KubeConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "webfarm-controllers-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k8sClient, err = client.New(cfg, client.Options{Scheme: testutil.Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  testutil.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	xdsServer = xds.NewServer("127.0.0.1:0", nil)
	if err := mgr.Add(xdsServer); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	promStub = testutil.NewPromStub()
	defer promStub.Close()
	promClient, err := promapi.NewClient(promapi.Config{Address: promStub.URL})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	authority, err := testAuthority()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := operator.Setup(mgr, platform, operator.Options{
		Controllers: controllers.ControllerOptions{MaxConcurrentReconciles: 2, XDS: xdsServer, Clock: operatorClock, Identity: authority},
		Prometheus:  promv1.NewAPI(promClient), CPUMonitorInterval: time.Hour,
		Autoscale: autoscaler.Options{Interval: 500 * time.Millisecond, DefaultNodeMHz: 2000},
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operatorClient = mgr.GetClient()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return code
}

// identityLifetime is the farms' identities' lifetime in these tests.
const identityLifetime = time.Hour

// testAuthority issues the farms' identities on the operator's clock, from
// a CA of the test run's own.
func testAuthority() (*identity.Authority, error) {
	certPEM, keyPEM, err := identity.NewCA(operatorClock.Now())
	if err != nil {
		return nil, err
	}
	ca, err := identity.ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return identity.NewAuthority(ca, []string{platform.XDSHost}, identityLifetime, operatorClock.Now)
}

// zapLevel keeps the operator's logs quiet unless WEBFARM_TEST_LOG=debug.
func zapLevel() zapcore.Level {
	if os.Getenv("WEBFARM_TEST_LOG") == "debug" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// newNamespace creates a namespace for one test; pods in it must meet the
// restricted Pod Security Standard, and the API server warns about workload
// templates that would not.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("test-%d", namespaceCounter.Add(1)),
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
		},
	}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}
