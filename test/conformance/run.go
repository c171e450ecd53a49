//go:build e2e || conformance

// The Gateway API conformance run: the upstream suite's GATEWAY-HTTP profile
// against the operator, installed by its chart on the local cluster, with
// the suite's images served from the cluster's loopback registry. The
// end-to-end suite runs it beside its other waiting tests (`make test-e2e`);
// `make test-conformance` runs it alone (root needed). It writes
// docs/gateway-api-conformance.md and the suite's YAML report under
// bin/conformance/.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	clientset "k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1alpha2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gatewayv1alpha3 "sigs.k8s.io/gateway-api/apis/v1alpha3"
	gatewayxv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	gwconformance "sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/flags"
	"sigs.k8s.io/gateway-api/conformance/utils/kubernetes"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"

	webfarmv1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/test/e2e/framework"
)

// The namespaces of the suite's base manifests, whose backends every test uses.
var baseNamespaces = []string{suite.InfrastructureNamespace, suite.AppBackendNamespace, suite.WebBackendNamespace}

// timeouts are the suite's defaults, except: a GatewayClass that a running
// controller accepts within seconds gets one minute, not three (a run
// without one fails sooner), and routes get twice the default to become
// consistent on the cluster's one node of 2 busy cores.
func timeouts() config.TimeoutConfig {
	t := config.DefaultTimeoutConfig()
	t.GWCMustBeAccepted = time.Minute
	t.MaxTimeToConsistency = 60 * time.Second
	return t
}

const reportFile = "bin/conformance/gateway-api-conformance-report.yaml"

// RunSuite runs the suite's GATEWAY-HTTP profile against the operator the
// cluster runs and writes the report, whatever the outcome; command is what
// the report says wrote it.
func RunSuite(t *testing.T, cluster *framework.Cluster, command string) {
	started := time.Now()
	run := NewRun(command)
	run.SuiteVersion = moduleVersion(t, cluster, "sigs.k8s.io/gateway-api/conformance")
	run.Implementation = cluster.Release.From.Version
	run.ReportFile = reportFile
	report := filepath.Join(cluster.Root, reportFile)
	if err := os.MkdirAll(filepath.Dir(report), 0o755); err != nil {
		t.Fatal(err)
	}

	opts := options(t, cluster)
	opts.GatewayClassName = GatewayClassName
	opts.ConformanceProfiles = []suite.ConformanceProfileName{Profile}
	opts.SupportedFeatures = ExtendedFeatures
	opts.SkipTests = slices.Sorted(maps.Keys(SkippedTests))
	opts.CleanupBaseResources = true
	opts.TimeoutConfig = timeouts()
	opts.ReportOutputPath = report
	opts.Implementation = confv1.Implementation{
		Organization: "webfarm-dev", Project: "webfarm-operator",
		URL:     "https://github.com/webfarm-dev/webfarm-operator",
		Version: run.Implementation, Contact: []string{"@webfarm-dev/maintainers"},
	}

	t.Log("serving the suite's images from the loopback registry (hack/images/push-conformance.sh)")
	if err := cluster.Local().ServeConformanceImages(t.Context()); err != nil {
		t.Fatal(err)
	}
	createGatewayClass(t, cluster, opts.Client)
	// The suite applies its base manifests only once a controller has
	// accepted the GatewayClass. Started here first, on their own, the
	// backends show that the cluster serves the suite (a failure here is the
	// cluster's, not the implementation's); then they go, so that the suite
	// starts from nothing, as it expects (its TLS backends read the
	// certificates it makes at their start).
	if !t.Run("the suite's backends start from the cluster's mirror of registry.k8s.io", func(t *testing.T) {
		startBackends(t, cluster, opts)
		run.BaseSetup = time.Since(started)
		t.Logf("base setup (images served, base manifests applied, every backend Available) took %s",
			run.BaseSetup.Round(100*time.Millisecond))
	}) {
		t.FailNow()
	}
	waitForBaseNamespacesGone(t, cluster)

	// Each test's outcome, as the suite's hook sees it end (parallel tests
	// end concurrently).
	var mu sync.Mutex
	claimed := sets.New(ExtendedFeatures...).Union(suite.GatewayHTTPConformanceProfile.CoreFeatures)
	opts.Hook = func(t *testing.T, test suite.ConformanceTest, _ *suite.ConformanceTestSuite) {
		names := make([]string, len(test.Features))
		for i, f := range test.Features {
			names[i] = string(f)
		}
		outcome := OutcomeOf(t.Failed(), t.Skipped(), test.Features, func(f features.FeatureName) bool { return claimed.Has(f) })
		if outcome == Failed {
			operatorErrors(t, cluster)
		}
		mu.Lock()
		defer mu.Unlock()
		run.Tests = append(run.Tests, TestResult{Name: test.ShortName, Features: names, Outcome: outcome})
	}
	// Registered first, so it runs last: after the suite has written its report.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		run.Duration = time.Since(started)
		if err := readReport(report, &run); err != nil {
			t.Errorf("the suite's report: %v", err)
		}
		if len(run.Tests) == 0 {
			run.StoppedInSetup = gatewayClassState(opts.Client, opts.TimeoutConfig.GWCMustBeAccepted)
		}
		doc := filepath.Join(cluster.Root, "docs", "gateway-api-conformance.md")
		if err := os.WriteFile(doc, []byte(Markdown(run)), 0o644); err != nil {
			t.Error(err)
		}
		t.Logf("wrote %s", doc)
	})
	gwconformance.RunConformanceWithOptions(t, opts)
}

// operatorErrors logs the operator's last errors: what a failed test of
// the suite needs to be understood once the cluster is gone.
func operatorErrors(t *testing.T, cluster *framework.Cluster) {
	out, err := cluster.Kubectl.Run(context.Background(), "logs", "-n", cluster.Release.Namespace, "-l", framework.OperatorPods,
		"--prefix", "--tail=400")
	var failures []string
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, "ERROR") || strings.Contains(line, `"level":"error"`) {
			failures = append(failures, line)
		}
	}
	t.Logf("the operator's last errors (%d, %v):\n%s", len(failures), err, strings.Join(failures[max(0, len(failures)-20):], "\n"))
}

// createGatewayClass creates the GatewayClass the suite's Gateways name,
// for the operator's controller, and deletes it after the run. One that
// exists already for that controller (installed with the operator) is
// used as it is, and left.
func createGatewayClass(t *testing.T, cluster *framework.Cluster, c client.Client) {
	t.Helper()
	templateNS := gatewayv1.Namespace(templateNamespace)
	gwc := &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayClassName},
		Spec: gatewayv1.GatewayClassSpec{ControllerName: ControllerName, ParametersRef: &gatewayv1.ParametersReference{
			Group: "webfarm.dev", Kind: "WebFarm", Name: templateName, Namespace: &templateNS}},
	}
	createTemplate(t, cluster.Client(t)) // the suite's client knows no webfarm.dev kinds
	err := c.Create(t.Context(), gwc)
	if apierrors.IsAlreadyExists(err) {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(gwc), gwc); err != nil {
			t.Fatal(err)
		}
		if gwc.Spec.ControllerName != ControllerName {
			t.Fatalf("GatewayClass %s exists for controller %s, not %s", GatewayClassName, gwc.Spec.ControllerName, ControllerName)
		}
		return
	}
	if err != nil {
		t.Fatalf("creating GatewayClass %s: %v", GatewayClassName, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Delete(ctx, gwc); err != nil {
			t.Errorf("deleting GatewayClass %s: %v", GatewayClassName, err)
		}
	})
}

// options are the suite's defaults (those of gwconformance.DefaultOptions,
// with the flags given) and clients of the local cluster: DefaultOptions
// reads KUBECONFIG, which a test that runs beside others cannot set.
func options(t *testing.T, cluster *framework.Cluster) suite.ConformanceOptions {
	t.Helper()
	log.SetLogger(zap.New(zap.WriteTo(os.Stdout), zap.UseDevMode(true)))
	cfg, err := clientcmd.BuildConfigFromFlags("", cluster.Local().Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	for _, install := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		gatewayv1.Install, gatewayv1alpha2.Install, gatewayv1alpha3.Install, gatewayxv1alpha1.Install} {
		if err := install(scheme); err != nil {
			t.Fatal(err)
		}
	}
	clientOptions := client.Options{Scheme: scheme}
	c, err := client.New(cfg, clientOptions)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	configurable := suite.ConfigurableOptions{
		CleanupBaseResources: flags.DefaultCleanupBaseResources,
		CleanupTestResources: flags.DefaultCleanupTestResources,
		GatewayClassName:     flags.DefaultGatewayClassName,
		Mode:                 flags.DefaultMode,
		TimeoutConfig:        config.DefaultTimeoutConfig(),
	}
	flags.ApplyAll(&configurable)
	return suite.ConformanceOptions{ConfigurableOptions: configurable, Client: c, ClientOptions: clientOptions,
		Clientset: clients, ManifestFS: []fs.FS{&gwconformance.Manifests}, RestConfig: cfg}
}

// The farm template of the class: the suite makes a Gateway per test, each
// served by a farm the operator makes from it; one small Envoy replica each
// fits them all on the local cluster's node.
const (
	templateNamespace = "webfarm-conformance"
	templateName      = "gateway-template"
)

func createTemplate(t *testing.T, c client.Client) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: templateNamespace}}
	if err := c.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cpu, memory := resource.MustParse("50m"), resource.MustParse("64Mi")
	farm := &webfarmv1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: templateNamespace, Name: templateName},
		Spec: webfarmv1.WebFarmSpec{Frontend: webfarmv1.Frontend{Replicas: 1, CPU: &cpu, Memory: &memory}}}
	if err := c.Create(t.Context(), farm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", templateNamespace, err)
		}
	})
}

// startBackends applies the suite's base manifests, with the Secrets their
// TLS backends mount (which the suite's setup makes, as here), and waits
// until every Deployment is Available: the images pulled through the
// cluster's mirror of registry.k8s.io (the loopback registry) and the pods
// Ready. It fails with the pods' state otherwise. All of it is deleted when
// t ends.
func startBackends(t *testing.T, cluster *framework.Cluster, opts suite.ConformanceOptions) {
	t.Helper()
	t.Log("applying the suite's base manifests and waiting for their backends")
	applier := kubernetes.Applier{ManifestFS: opts.ManifestFS, GatewayClass: GatewayClassName, ControllerName: ControllerName}
	applier.MustApplyWithCleanup(t, opts.Client, opts.TimeoutConfig, "base/manifests.yaml", true)
	_, ca, caKey := kubernetes.MustCreateCACertConfigMap(t, suite.InfrastructureNamespace, "tls-checks-ca-certificate")
	secrets := []client.Object{
		kubernetes.MustCreateCASignedCertSecret(t, suite.InfrastructureNamespace, "tls-checks-certificate",
			[]string{"abc.example.com", "spiffe://abc.example.com/test-identity", "other.example.com"}, ca, caKey),
		kubernetes.MustCreateCASignedCertSecret(t, suite.InfrastructureNamespace, "tls-passthrough-checks-certificate",
			[]string{"abc.example.com"}, ca, caKey),
		kubernetes.MustCreateCASignedCertSecret(t, suite.AppBackendNamespace, "tls-passthrough-checks-certificate",
			[]string{"abc.example.com"}, ca, caKey),
	}
	applier.MustApplyObjectsWithCleanup(t, opts.Client, opts.TimeoutConfig, secrets, true)
	for _, ns := range baseNamespaces {
		if _, err := cluster.Kubectl.Run(t.Context(), "wait", "--for=condition=Available", "deployment", "--all",
			"-n", ns, "--timeout=5m"); err != nil {
			pods, _ := cluster.Kubectl.Run(context.Background(), "get", "pods", "-n", ns, "-o", "wide")
			events, _ := cluster.Kubectl.Run(context.Background(), "get", "events", "-n", ns, "--sort-by=.lastTimestamp")
			t.Fatalf("the suite's backends in %s are not Available: %v\n%s\n%s", ns, err, pods, events)
		}
		servedFromLoopback(t, cluster, ns)
	}
}

// servedFromLoopback checks that every container of the suite's pods in
// namespace runs the
// image the loopback registry serves under the registry.k8s.io name its pod
// asks for (the digest the kubelet reports is the one pushed there): nothing
// came from the internet.
func servedFromLoopback(t *testing.T, cluster *framework.Cluster, namespace string) {
	t.Helper()
	out, err := cluster.Kubectl.Run(t.Context(), "get", "pods", "-n", namespace, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := json.Unmarshal([]byte(out), &pods); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Labels[vocabulary.LabelManagedBy] == vocabulary.ManagedBy {
			continue // the frontends of the suite's Gateways: the operator's own images
		}
		for _, c := range pod.Spec.Containers {
			i := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Name })
			if i < 0 {
				t.Fatalf("pod %s/%s has no status of container %s", namespace, pod.Name, c.Name)
			}
			want, err := loopbackDigest(t.Context(), c.Image)
			if err != nil {
				t.Fatalf("%s: %v", c.Image, err)
			}
			// The kubelet reports NAME@DIGEST, under any name the image has on the node.
			if id := pod.Status.ContainerStatuses[i].ImageID; !strings.HasSuffix(id, "@"+want) {
				t.Errorf("pod %s/%s runs %s as %s, not the loopback registry's %s", namespace, pod.Name, c.Image, id, want)
			}
		}
	}
}

// loopbackDigest is the digest of the manifest the loopback registry serves
// for an image named registry.k8s.io/REPOSITORY:TAG (as
// REPOSITORY:TAG there: it mirrors that host).
func loopbackDigest(ctx context.Context, image string) (string, error) {
	rest, ok := strings.CutPrefix(image, "registry.k8s.io/")
	repository, tag, tagged := strings.Cut(rest, ":")
	if !ok || !tagged {
		return "", errors.New("not a tagged registry.k8s.io image")
	}
	registry := os.Getenv("WEBFARM_LOCAL_REGISTRY")
	if registry == "" {
		registry = "127.0.0.1:5000"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+registry+"/v2/"+repository+"/manifests/"+tag, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if digest := resp.Header.Get("Docker-Content-Digest"); resp.StatusCode == http.StatusOK && digest != "" {
		return digest, nil
	}
	return "", fmt.Errorf("the loopback registry answers %s for %s:%s", resp.Status, repository, tag)
}

// waitForBaseNamespacesGone waits until the base manifests' namespaces,
// deleted, are gone (their pods have stopped), so that the suite can create
// them again.
func waitForBaseNamespacesGone(t *testing.T, cluster *framework.Cluster) {
	t.Helper()
	start := time.Now()
	framework.Eventually(t, 3*time.Minute, func() error {
		out, err := cluster.Kubectl.Run(t.Context(), append([]string{"get", "namespace", "--ignore-not-found", "-o", "name"}, baseNamespaces...)...)
		if err != nil {
			return err
		}
		if left := strings.Fields(out); len(left) > 0 {
			return fmt.Errorf("still there: %v", left)
		}
		return nil
	})
	t.Logf("the base namespaces were gone after %s", time.Since(start).Round(100*time.Millisecond))
}

// readReport adds what the suite's YAML report says of the profile to run.
func readReport(path string, run *Run) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var report confv1.ConformanceReport
	if err := yaml.Unmarshal(raw, &report); err != nil {
		return err
	}
	run.GatewayAPIVersion, run.GatewayAPIChannel = report.GatewayAPIVersion, report.GatewayAPIChannel
	if run.Date, err = time.Parse(time.RFC3339, report.Date); err != nil {
		return err
	}
	for _, p := range report.ProfileReports {
		if p.Name != string(Profile) {
			continue
		}
		run.Result.Core = string(p.Core.Result)
		if p.Extended != nil {
			run.Result.Extended = string(p.Extended.Result)
		}
	}
	return nil
}

// gatewayClassState tells why the suite stopped before its tests: its setup
// waits for the GatewayClass to be accepted first.
func gatewayClassState(c client.Client, waited time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var gwc gatewayv1.GatewayClass
	if err := c.Get(ctx, client.ObjectKey{Name: GatewayClassName}, &gwc); err != nil {
		return fmt.Sprintf("reading GatewayClass %s: %v.", GatewayClassName, err)
	}
	for _, cond := range gwc.Status.Conditions {
		if cond.Type == string(gatewayv1.GatewayClassConditionStatusAccepted) && cond.ObservedGeneration == gwc.Generation &&
			cond.Status != metav1.ConditionUnknown {
			return fmt.Sprintf("GatewayClass %s is Accepted=%s (%s: %s).", GatewayClassName, cond.Status, cond.Reason, cond.Message) +
				gatewaysNotAccepted(ctx, c)
		}
	}
	return fmt.Sprintf("no controller accepted GatewayClass %s (controllerName %s) within %s.", GatewayClassName, ControllerName, waited)
}

// gatewaysNotAccepted names the suite's base Gateways that are not
// Accepted and why: the setup waits for every one of them.
func gatewaysNotAccepted(ctx context.Context, c client.Client) string {
	var list gatewayv1.GatewayList
	if err := c.List(ctx, &list, client.InNamespace(suite.InfrastructureNamespace)); err != nil {
		return fmt.Sprintf(" Listing the Gateways: %v.", err)
	}
	var out []string
	for _, gw := range list.Items {
		for _, cond := range gw.Status.Conditions {
			if cond.Type == string(gatewayv1.GatewayConditionAccepted) && cond.Status != metav1.ConditionTrue {
				out = append(out, fmt.Sprintf(" Gateway %s is Accepted=%s (%s: %s).", gw.Name, cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, "")
}

// moduleVersion is the version of a module that go.mod requires.
func moduleVersion(t *testing.T, cluster *framework.Cluster, module string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = cluster.Root
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go list -m %s: %v: %s", module, err, exit.Stderr)
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
