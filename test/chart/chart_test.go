// Package chart tests the Helm chart with the real helm: lint, render, install
// on a real API server, and the operator running with exactly the chart's RBAC.
package chart

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
)

var chartDir = filepath.Join(testutil.RepoRoot(), "charts", "webfarm-operator")

func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testutil.Tool(t, "WEBFARM_HELM", "helm"), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// rendered is the chart's output split into objects by kind.
type rendered map[string][][]byte

func render(t *testing.T, args ...string) rendered {
	t.Helper()
	out := helm(t, append([]string{"template", "wf", chartDir, "--namespace", "webfarm-system", "--include-crds", "--kube-version", "1.36.3"}, args...)...)
	objs := rendered{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
			continue
		}
		objs[meta.Kind] = append(objs[meta.Kind], doc)
	}
	return objs
}

func TestTheChartLints(t *testing.T) {
	helm(t, "lint", "--strict", chartDir)
}

func TestTheChartRendersTheOperator(t *testing.T) {
	objs := render(t)
	for kind, want := range map[string]int{
		"CustomResourceDefinition": 3, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, // the operator's, and its metrics' readers
		"Role": 1, "RoleBinding": 1, "Deployment": 1, "Service": 2, // xDS and metrics
	} {
		if got := len(objs[kind]); got != want {
			t.Errorf("%d %s objects, want %d", got, kind, want)
		}
	}

	t.Run("a metrics reader may get the metrics and the frontends' discovery, nothing else", func(t *testing.T) {
		var reader rbacv1.ClusterRole
		mustUnmarshal(t, objs["ClusterRole"][1], &reader)
		want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", controllers.FrontendDiscoveryPath}, Verbs: []string{"get"}}}
		if !strings.HasSuffix(reader.Name, "-metrics-reader") || !reflect.DeepEqual(reader.Rules, want) {
			t.Errorf("ClusterRole %s rules %+v, want %+v", reader.Name, reader.Rules, want)
		}
	})

	t.Run("the ClusterRole has exactly the rules generated from the controllers' markers", func(t *testing.T) {
		var chartRole, generated rbacv1.ClusterRole
		mustUnmarshal(t, objs["ClusterRole"][0], &chartRole) // clusterrole.yaml renders before rbac.yaml
		raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "rbac", "role.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		mustUnmarshal(t, raw, &generated)
		if !reflect.DeepEqual(chartRole.Rules, generated.Rules) {
			t.Errorf("chart rules differ from config/rbac/role.yaml: run make manifests")
		}
	})

	t.Run("the operator's pod meets the restricted Pod Security Standard", func(t *testing.T) {
		var d appsv1.Deployment
		mustUnmarshal(t, objs["Deployment"][0], &d)
		evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec) {
			if !r.Allowed {
				t.Errorf("violates restricted: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
	})

	t.Run("values reach the operator's flags", func(t *testing.T) {
		objs := render(t, "--set", "image.tag=1.2.3", "--set", "workloadImages.nginx=registry.example.com/nginx:9", "--set", "concurrency=12")
		var d appsv1.Deployment
		mustUnmarshal(t, objs["Deployment"][0], &d)
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "localhost/webfarm-operator:1.2.3" || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("image %s (%s)", c.Image, c.ImagePullPolicy)
		}
		for _, want := range []string{"--nginx-image=registry.example.com/nginx:9", "--cache-agent-image=localhost/webfarm-operator:1.2.3", "--metrics-secure=true", "--concurrency=12", "--xds-address=wf-xds.webfarm-system.svc:18000", "--leader-elect"} {
			if !contains(c.Args, want) {
				t.Errorf("args %v lack %s", c.Args, want)
			}
		}
	})

	t.Run("the chart's CRDs are the generated ones", func(t *testing.T) {
		for _, doc := range objs["CustomResourceDefinition"] {
			var crd apiextensionsv1.CustomResourceDefinition
			mustUnmarshal(t, doc, &crd)
			raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "crd", "bases", crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var generated apiextensionsv1.CustomResourceDefinition
			mustUnmarshal(t, raw, &generated)
			if !reflect.DeepEqual(crd.Spec, generated.Spec) {
				t.Errorf("CRD %s in the chart differs from config/crd/bases: run make manifests", crd.Name)
			}
		}
	})
}

// The chart installs on a real API server, and the operator, running with
// nothing but the chart's RBAC, reconciles a farm.
func TestTheChartInstallsAndItsRBACIsEnoughForTheOperator(t *testing.T) {
	cp, err := testutil.StartControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kubeconfig, err := cp.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	out := helm(t, "install", "wf", chartDir, "--kubeconfig", path, "--namespace", "webfarm-system", "--create-namespace")
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install:\n%s", out)
	}
	admin, err := client.New(cp.Config, client.Options{Scheme: testutil.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: "webfarm-system", Name: "wf"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("the operator's Deployment: %v", err)
	}

	// Run the controllers as the chart's ServiceAccount.
	asOperator := rest.CopyConfig(cp.Config)
	asOperator.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:webfarm-system:wf"}
	mgr, err := ctrl.NewManager(asOperator, ctrl.Options{Scheme: testutil.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupAll(mgr, model.Platform{Images: model.Images{Envoy: "envoy", Nginx: "nginx", CacheAgent: "agent", PullPolicy: "IfNotPresent"}, XDSHost: "wf-xds.webfarm-system.svc", XDSPort: 18000}, controllers.ControllerOptions{MaxConcurrentReconciles: 2}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	pool := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "www"}, Spec: v1.AppPoolSpec{App: &v1.AppContainer{Image: "shop:1", Port: 3000}}}
	policy := &v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "static"}}
	farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "www", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "www", CachePolicy: "static"}, {PathPrefix: "/missing", AppPool: "gone"}}},
	}}}
	for _, o := range []client.Object{ns, pool, policy, farm} {
		if err := admin.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, name := range []string{"web-frontend", "www-pool", "static-cache"} {
			if err := admin.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, &appsv1.Deployment{}); err != nil {
				return fmt.Errorf("deployment %s: %w", name, err)
			}
		}
		if err := admin.Get(context.Background(), client.ObjectKeyFromObject(farm), farm); err != nil {
			return err
		}
		ready := false
		for _, c := range farm.Status.Conditions {
			ready = ready || (c.Type == v1.ConditionReady && c.Reason == v1.ReasonInvalidReference)
		}
		if !ready {
			return fmt.Errorf("farm conditions %v", farm.Status.Conditions)
		}
		var events eventsv1.EventList
		if err := admin.List(context.Background(), &events, client.InNamespace("shop")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == "web" && e.Reason == v1.ReasonInvalidReference {
				return nil
			}
		}
		return fmt.Errorf("no InvalidReference event: the operator may not create events")
	})

	helm(t, "uninstall", "wf", "--kubeconfig", path, "--namespace", "webfarm-system")
}

func mustUnmarshal(t *testing.T, doc []byte, into any) {
	t.Helper()
	if err := yaml.Unmarshal(doc, into); err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
