// Package chart tests the Helm chart with the real helm: lint, render, install
// on a real API server, and the operator running with exactly the chart's RBAC.
package chart

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/identity"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/operator"
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
		"CustomResourceDefinition": 4 + 10, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1, // the operator's, and its metrics' readers
		"Role": 2, "RoleBinding": 2, "Deployment": 1, "Service": 2, // leader election and the control CA; xDS and metrics
		"NetworkPolicy": 1,
		// The Gateway API's standard channel: 10 CRDs and its safe-upgrades policy.
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1,
	} {
		if got := len(objs[kind]); got != want {
			t.Errorf("%d %s objects, want %d", got, kind, want)
		}
	}

	t.Run("only the frontends reach xDS and the activator; metrics and probes have their own rules", func(t *testing.T) {
		var np networkingv1.NetworkPolicy
		mustUnmarshal(t, objs["NetworkPolicy"][0], &np)
		if len(np.Spec.Ingress) != 3 || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
			t.Fatalf("ingress rules %+v, policy types %v; want 3 ingress rules", np.Spec.Ingress, np.Spec.PolicyTypes)
		}
		frontends := np.Spec.Ingress[0]
		if len(frontends.From) != 1 || frontends.From[0].NamespaceSelector == nil || frontends.From[0].PodSelector == nil ||
			frontends.From[0].PodSelector.MatchLabels["app.kubernetes.io/component"] != "frontend" ||
			frontends.From[0].PodSelector.MatchLabels["app.kubernetes.io/managed-by"] != "webfarm-operator" {
			t.Errorf("xDS peers %+v, want the generated frontends of every namespace", frontends.From)
		}
		var ports []string
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				ports = append(ports, p.Port.String())
			}
		}
		if got := strings.Join(ports, ","); got != "xds,activator,metrics,probes" {
			t.Errorf("ports %s, want xds,activator,metrics,probes", got)
		}
		var d appsv1.Deployment
		mustUnmarshal(t, objs["Deployment"][0], &d)
		named := map[string]bool{}
		for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
			named[p.Name] = true
		}
		for _, p := range ports {
			if !named[p] {
				t.Errorf("the policy admits port %q, which the operator's container does not name", p)
			}
		}
		if off := render(t, "--set", "networkPolicy.enabled=false"); len(off["NetworkPolicy"]) != 0 {
			t.Errorf("networkPolicy.enabled=false still renders a NetworkPolicy")
		}
	})

	t.Run("the one Secret the operator may read is its control CA, by name", func(t *testing.T) {
		for _, doc := range objs["Role"] {
			var role rbacv1.Role
			mustUnmarshal(t, doc, &role)
			for _, r := range role.Rules {
				if !slices.Contains(r.Resources, "secrets") {
					continue
				}
				for _, verb := range r.Verbs {
					switch {
					case verb == "create":
					case verb == "get" && len(r.ResourceNames) == 1 && strings.HasSuffix(r.ResourceNames[0], "-control-ca"):
					default:
						t.Errorf("Role %s grants %s on Secrets %v; want get of the control CA and create only", role.Name, verb, r.ResourceNames)
					}
				}
			}
		}
	})

	t.Run("with watchNamespaces, the cluster-scoped rules are exactly the generated role's cluster-scoped ones", func(t *testing.T) {
		objs := render(t, "--set", "watchNamespaces={shop,blog}")
		if len(objs["ClusterRoleBinding"]) != 1 || len(objs["RoleBinding"]) != 4 {
			t.Fatalf("%d ClusterRoleBindings and %d RoleBindings, want 1 (cluster-scoped rules) and 4 (two namespaces, leader election, the control CA)",
				len(objs["ClusterRoleBinding"]), len(objs["RoleBinding"]))
		}
		var scoped, generated rbacv1.ClusterRole
		for _, doc := range objs["ClusterRole"] {
			var r rbacv1.ClusterRole
			mustUnmarshal(t, doc, &r)
			if strings.HasSuffix(r.Name, "-cluster-scoped") {
				scoped = r
			}
		}
		raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "rbac", "role.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		mustUnmarshal(t, raw, &generated)
		clusterScoped := map[string]bool{"nodes": true, "namespaces": true, "tokenreviews": true, "subjectaccessreviews": true,
			"gatewayclasses": true, "gatewayclasses/status": true,
			"customresourcedefinitions": true, "clusterroles": true, "clusterrolebindings": true, "persistentvolumes": true}
		var want []rbacv1.PolicyRule
		for _, r := range generated.Rules {
			var res []string
			for _, name := range r.Resources {
				if clusterScoped[name] {
					res = append(res, name)
				}
			}
			if len(res) > 0 {
				want = append(want, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: res, Verbs: r.Verbs})
			}
		}
		key := func(rs []rbacv1.PolicyRule) []string {
			var out []string
			for _, r := range rs {
				for _, res := range r.Resources {
					out = append(out, fmt.Sprintf("%v/%s:%v", r.APIGroups, res, r.Verbs))
				}
			}
			sort.Strings(out)
			return out
		}
		if got, w := key(scoped.Rules), key(want); !reflect.DeepEqual(got, w) {
			t.Errorf("cluster-scoped rules %v, want %v (from config/rbac/role.yaml)", got, w)
		}
	})

	t.Run("a metrics reader may get the metrics, nothing else", func(t *testing.T) {
		var reader rbacv1.ClusterRole
		mustUnmarshal(t, objs["ClusterRole"][1], &reader)
		want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
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
		objs := render(t, "--set", "image.tag=1.2.3", "--set", "workloadImages.nginx.registry=registry.example.com", "--set", "workloadImages.nginx.tag=9", "--set", "concurrency=12",
			"--set", "leaderElection.renewDeadline=40s", "--set", "leaderElection.leaseDuration=60s")
		var d appsv1.Deployment
		mustUnmarshal(t, objs["Deployment"][0], &d)
		c := d.Spec.Template.Spec.Containers[0]
		if c.Image != "ghcr.io/webfarm-dev/webfarm-operator:1.2.3" || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("image %s (%s)", c.Image, c.ImagePullPolicy)
		}
		for _, want := range []string{"--nginx-image=registry.example.com/webfarm-nginx:9", "--cache-agent-image=ghcr.io/webfarm-dev/webfarm-operator:1.2.3", "--metrics-secure=true", "--concurrency=12", "--xds-address=wf-xds.webfarm-system.svc:18000", "--leader-elect",
			"--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=40s", "--leader-elect-retry-period=2s"} {
			if !contains(c.Args, want) {
				t.Errorf("args %v lack %s", c.Args, want)
			}
		}
	})

	t.Run("every image is the release's: its registry, the chart's version as the tag, a digest when pinned", func(t *testing.T) {
		version := chartVersion(t)
		for _, tc := range []struct {
			name string
			args []string
			want map[string]string // the operator's image and flags -> reference
		}{
			{
				name: "by default every image comes from the public registry tagged with the chart's version",
				want: map[string]string{
					"image":               "ghcr.io/webfarm-dev/webfarm-operator:" + version,
					"--envoy-image":       "ghcr.io/webfarm-dev/webfarm-envoy:" + version,
					"--nginx-image":       "ghcr.io/webfarm-dev/webfarm-nginx:" + version,
					"--cache-agent-image": "ghcr.io/webfarm-dev/webfarm-operator:" + version,
				},
			},
			{
				name: "a mirror's registry and digests pin every image by its content alone",
				args: []string{"--set", "image.registry=mirror.example:5000/farm/", "--set", "image.digest=sha256:aa",
					"--set", "workloadImages.envoy.digest=sha256:bb", "--set", "workloadImages.nginx.digest=sha256:cc"},
				want: map[string]string{
					"image":               "mirror.example:5000/farm/webfarm-operator@sha256:aa",
					"--envoy-image":       "mirror.example:5000/farm/webfarm-envoy@sha256:bb",
					"--nginx-image":       "mirror.example:5000/farm/webfarm-nginx@sha256:cc",
					"--cache-agent-image": "mirror.example:5000/farm/webfarm-operator@sha256:aa",
				},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var d appsv1.Deployment
				mustUnmarshal(t, render(t, tc.args...)["Deployment"][0], &d)
				c := d.Spec.Template.Spec.Containers[0]
				if c.Image != tc.want["image"] {
					t.Errorf("operator image %s, want %s", c.Image, tc.want["image"])
				}
				for flag, ref := range tc.want {
					if flag != "image" && !contains(c.Args, flag+"="+ref) {
						t.Errorf("args %v lack %s=%s", c.Args, flag, ref)
					}
				}
			})
		}
	})

	t.Run("the CRDs come with the release, are kept on uninstall, and can be left out", func(t *testing.T) {
		for _, crd := range crdsOf(t, objs, v1.GroupVersion.Group) {
			if crd.Annotations["helm.sh/resource-policy"] != "keep" || crd.Labels["app.kubernetes.io/managed-by"] != "Helm" {
				t.Errorf("CRD %s: annotations %v, labels %v", crd.Name, crd.Annotations, crd.Labels)
			}
		}
		for _, crd := range crdsOf(t, render(t, "--set", "crds.keep=false"), v1.GroupVersion.Group) {
			if _, kept := crd.Annotations["helm.sh/resource-policy"]; kept {
				t.Errorf("CRD %s is kept with crds.keep=false", crd.Name)
			}
		}
		if n := len(crdsOf(t, render(t, "--set", "crds.enabled=false"), v1.GroupVersion.Group)); n != 0 {
			t.Errorf("%d CRDs rendered with crds.enabled=false", n)
		}
	})

	t.Run("the chart's CRDs are the generated ones", func(t *testing.T) {
		for _, crd := range crdsOf(t, objs, v1.GroupVersion.Group) {
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

	t.Run("the Gateway API's standard channel comes at go.mod's version, is kept on uninstall, and can be left out", func(t *testing.T) {
		version, dir := gatewayAPIModule(t)
		crds := crdsOf(t, objs, gatewayAPIGroup)
		if len(crds) != 10 {
			t.Errorf("%d Gateway API CRDs, want the standard channel's 10", len(crds))
		}
		for _, crd := range crds {
			if v, channel := crd.Annotations["gateway.networking.k8s.io/bundle-version"], crd.Annotations["gateway.networking.k8s.io/channel"]; v != version || channel != "standard" {
				t.Errorf("CRD %s is of Gateway API %s, channel %s; go.mod requires %s, standard", crd.Name, v, channel, version)
			}
			if crd.Annotations["helm.sh/resource-policy"] != "keep" || crd.Labels["app.kubernetes.io/managed-by"] != "Helm" {
				t.Errorf("CRD %s: annotations %v, labels %v", crd.Name, crd.Annotations, crd.Labels)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "config", "crd", "standard", crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var upstream apiextensionsv1.CustomResourceDefinition
			mustUnmarshal(t, raw, &upstream)
			if !reflect.DeepEqual(crd.Spec, upstream.Spec) {
				t.Errorf("CRD %s in the chart differs from %s's: run make manifests", crd.Name, dir)
			}
		}
		for _, crd := range crdsOf(t, render(t, "--set", "gatewayAPI.crds.keep=false"), gatewayAPIGroup) {
			if _, kept := crd.Annotations["helm.sh/resource-policy"]; kept {
				t.Errorf("CRD %s is kept with gatewayAPI.crds.keep=false", crd.Name)
			}
		}
		off := render(t, "--set", "gatewayAPI.crds.enabled=false")
		if n := len(crdsOf(t, off, gatewayAPIGroup)) + len(off["ValidatingAdmissionPolicy"]); n != 0 {
			t.Errorf("%d Gateway API objects rendered with gatewayAPI.crds.enabled=false", n)
		}
		if n := len(crdsOf(t, off, v1.GroupVersion.Group)); n != 4 {
			t.Errorf("%d of the operator's CRDs rendered with gatewayAPI.crds.enabled=false, want 4", n)
		}
	})
}

const gatewayAPIGroup = "gateway.networking.k8s.io"

// crdsOf returns the rendered CRDs of an API group.
func crdsOf(t *testing.T, objs rendered, group string) []apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, doc := range objs["CustomResourceDefinition"] {
		var crd apiextensionsv1.CustomResourceDefinition
		mustUnmarshal(t, doc, &crd)
		if crd.Spec.Group == group {
			crds = append(crds, crd)
		}
	}
	return crds
}

// gatewayAPIModule returns the version of sigs.k8s.io/gateway-api that go.mod
// requires and the folder of its source in the module cache.
func gatewayAPIModule(t *testing.T) (version, dir string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = testutil.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/gateway-api: %v", err)
	}
	version, dir, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	if dir == "" {
		t.Fatalf("sigs.k8s.io/gateway-api %s is not in the module cache (go mod download)", version)
	}
	return version, dir
}

// The kustomize installation (config/default) names the same release's
// images as the chart does by default.
func TestTheKustomizeInstallationRunsTheChartsRelease(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		if strings.Contains(doc, "kind: Deployment") {
			mustUnmarshal(t, []byte(doc), &d)
		}
	}
	if len(d.Spec.Template.Spec.Containers) == 0 {
		t.Fatal("config/manager/manager.yaml has no Deployment")
	}
	version := chartVersion(t)
	c := d.Spec.Template.Spec.Containers[0]
	want := map[string]string{
		"image":               "ghcr.io/webfarm-dev/webfarm-operator:" + version,
		"--envoy-image":       "ghcr.io/webfarm-dev/webfarm-envoy:" + version,
		"--nginx-image":       "ghcr.io/webfarm-dev/webfarm-nginx:" + version,
		"--cache-agent-image": "ghcr.io/webfarm-dev/webfarm-operator:" + version,
	}
	if c.Image != want["image"] {
		t.Errorf("image %s, want %s", c.Image, want["image"])
	}
	for flag, ref := range want {
		if flag != "image" && !contains(c.Args, flag+"="+ref) {
			t.Errorf("args %v lack %s=%s", c.Args, flag, ref)
		}
	}
}

// chartVersion is the version in Chart.yaml (its appVersion is the same).
func chartVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	mustUnmarshal(t, raw, &meta)
	if meta.Version == "" || meta.Version != meta.AppVersion {
		t.Fatalf("Chart.yaml: version %q and appVersion %q must be equal: the images are tagged with the release's version", meta.Version, meta.AppVersion)
	}
	return meta.Version
}

// The chart installs on a real API server, and the operator, running with
// nothing but the chart's RBAC, reconciles a farm.
func TestTheChartInstallsAndItsRBACIsEnoughForTheOperator(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.log")
	installAndReconcile(t, nil, audit)

	// Least privilege: every permission of the operator's ClusterRole is one
	// the operator used above (the API server's audit log says which), or
	// one that this run cannot exercise, with the reason.
	unexercised := map[string]string{
		"/nodes:get":                                            "the autoscaler reads nodes through the cache; get is the cache's fallback",
		"/nodes:list":                                           "the autoscaler (with Prometheus) and the routing controller (xDS) read each worker's node clock rate; this run has neither",
		"/nodes:watch":                                          "as list",
		"/pods:get":                                             "pods are read through the cache",
		"/services:get":                                         "Services are read through the cache",
		"/configmaps:delete":                                    "a cache tier that no route names any more is removed (10 s after)",
		"/services:delete":                                      "as configmaps:delete",
		"policy/poddisruptionbudgets:delete":                    "as configmaps:delete",
		"apps/deployments:delete":                               "as configmaps:delete",
		"apps/deployments:get":                                  "Deployments are read through the cache",
		"/serviceaccounts:get":                                  "read through the cache",
		"policy/poddisruptionbudgets:get":                       "read through the cache",
		"networking.k8s.io/networkpolicies:get":                 "read through the cache",
		"networking.k8s.io/networkpolicies:delete":              "a removed cache tier's, and those made before networkPolicy.isolatePools was turned off; this run does neither",
		"discovery.k8s.io/endpointslices:get":                   "as list",
		"events.k8s.io/events:patch":                            "a repeated event is a patch of the first (an event series): a run may not repeat one",
		"/configmaps:get":                                       "a new pool checks that its content ConfigMap (the user's, outside the cache) exists, and the cache tier reads it for its revision; this run's pool has an app, no ConfigMap",
		"/persistentvolumeclaims:get":                           "a new pool checks that its content claim exists; this run's pool has an app, no claim",
		"discovery.k8s.io/endpointslices:list":                  "the routing controller (xDS) watches them; this run serves no xDS",
		"discovery.k8s.io/endpointslices:watch":                 "as list",
		"authentication.k8s.io/tokenreviews:create":             "the metrics endpoint checks each scraper's token (metrics.secure); this run serves no metrics",
		"authorization.k8s.io/subjectaccessreviews:create":      "as tokenreviews: the scraper's right to the path",
		"webfarm.dev/apppools/finalizers:update":                "owner references with blockOwnerDeletion need it: the API server checks it, the operator never calls it",
		"webfarm.dev/cachepolicies/finalizers:update":           "as apppools/finalizers",
		"webfarm.dev/webfarms/finalizers:update":                "as apppools/finalizers",
		"webfarm.dev/apppools:get":                              "AppPools are read through the cache",
		"webfarm.dev/cachepolicies:get":                         "read through the cache",
		"webfarm.dev/webfarms:get":                              "read through the cache",
		"webfarm.dev/apppools:patch":                            "the activator annotates an idle pool that starts on demand (webfarm.dev/wake)",
		"/pods:patch":                                           "recycling marks the worker it replaces (webfarm.dev/recycle and its pod-deletion-cost); this run recycles none",
		"/namespaces:get":                                       "read through the cache (a Gateway's listeners admit routes by their namespace's labels)",
		"gateway.networking.k8s.io/gatewayclasses:get":          "Gateway API objects are read through the cache",
		"gateway.networking.k8s.io/gateways:get":                "as gatewayclasses:get",
		"gateway.networking.k8s.io/httproutes:get":              "as gatewayclasses:get",
		"gateway.networking.k8s.io/referencegrants:get":         "as gatewayclasses:get",
		"webfarm.dev/sitecontents:get":                          "as gatewayclasses:get: a route's SiteContent is read through the cache",
		"gateway.networking.k8s.io/gatewayclasses/status:patch": "the operator accepts its GatewayClasses; this run has none",
		"gateway.networking.k8s.io/gateways/status:patch":       "a Gateway's status; this run has no Gateway",
		"gateway.networking.k8s.io/httproutes/status:update":    "a route's parent status; this run has no HTTPRoute",
		"webfarm.dev/webfarms:create":                           "the farm of a Gateway that names none; this run has no Gateway",
		"webfarm.dev/webfarms:update":                           "as webfarms:create: the farm follows its GatewayClass's template",
	}
	used := operatorRequests(t, audit, "system:serviceaccount:webfarm-system:wf")
	for key := range maps.Clone(used) {
		resource, verb, _ := strings.Cut(key, ":")
		switch verb {
		case "watch": // informers list through their watch (initial events); the API server still asks for list
			used[resource+":list"] = true
		case "patch": // a server-side apply that creates an object is authorised as create too
			used[resource+":create"] = true
		}
	}
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	mustUnmarshal(t, raw, &role)
	for _, r := range role.Rules {
		for _, group := range r.APIGroups {
			for _, res := range r.Resources {
				for _, verb := range r.Verbs {
					key := group + "/" + res + ":" + verb
					if !used[key] && unexercised[key] == "" {
						t.Errorf("the ClusterRole grants %s, which the operator did not use and no reason explains", key)
					}
				}
			}
		}
	}
}

// operatorRequests reads the API server's audit log: each group/resource:verb
// that user (impersonated) was allowed.
func operatorRequests(t *testing.T, path, user string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e struct {
			Verb             string `json:"verb"`
			ImpersonatedUser *struct {
				Username string `json:"username"`
			} `json:"impersonatedUser"`
			ObjectRef *struct {
				Resource, APIGroup, Subresource string
			} `json:"objectRef"`
			Annotations map[string]string `json:"annotations"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if e.ImpersonatedUser == nil || e.ImpersonatedUser.Username != user || e.ObjectRef == nil ||
			e.Annotations["authorization.k8s.io/decision"] != "allow" {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		used[e.ObjectRef.APIGroup+"/"+res+":"+e.Verb] = true
	}
	if len(used) == 0 {
		t.Fatalf("no request of %s in the audit log", user)
	}
	return used
}

// With watchNamespaces, the chart's RoleBindings and cluster-scoped rules are
// enough for an operator that serves those namespaces, and it can touch
// nothing elsewhere.
func TestAnOperatorWatchingNamespacesNeedsNoClusterWideRights(t *testing.T) {
	admin, asOperator := installAndReconcile(t, []string{"shop"}, "", "--set", "watchNamespaces={shop}")
	asOperatorClient, err := client.New(asOperator, client.Options{Scheme: testutil.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func() error
	}{
		{"it cannot list Deployments of the whole cluster", func() error { return asOperatorClient.List(ctx, &appsv1.DeploymentList{}) }},
		{"it cannot list another namespace's ConfigMaps", func() error {
			return asOperatorClient.List(ctx, &corev1.ConfigMapList{}, client.InNamespace("elsewhere"))
		}},
		{"it cannot create a Deployment in another namespace", func() error {
			return asOperatorClient.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "x"}})
		}},
		{"it cannot read another namespace's farms", func() error {
			return asOperatorClient.List(ctx, &v1.WebFarmList{}, client.InNamespace("elsewhere"))
		}},
		{"it can read no Secret at all", func() error {
			return asOperatorClient.List(ctx, &corev1.SecretList{}, client.InNamespace("shop"))
		}},
		{"it cannot read back the identity it wrote for a farm", func() error {
			return asOperatorClient.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web-frontend-identity"}, &corev1.Secret{})
		}},
		{"it cannot read a Secret of its own namespace other than its CA", func() error {
			return asOperatorClient.Get(ctx, client.ObjectKey{Namespace: "webfarm-system", Name: "sh.helm.release.v1.wf.v1"}, &corev1.Secret{})
		}},
		{"it cannot list the Secrets of its own namespace", func() error {
			return asOperatorClient.List(ctx, &corev1.SecretList{}, client.InNamespace("webfarm-system"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want Forbidden", err)
			}
		})
	}
}

// installAndReconcile installs the chart with helm args on a fresh control
// plane, runs the controllers as the chart's ServiceAccount (serving
// watch, or all namespaces; the API server audits every request to
// auditLog when set), and waits until they reconcile a farm with a
// pool and a cache policy in namespace "shop". It returns an admin client
// and the operator's REST config.
func installAndReconcile(t *testing.T, watch []string, auditLog string, helmArgs ...string) (client.Client, *rest.Config) {
	t.Helper()
	// The chart installs the CRDs, as on a user's cluster.
	opts := []testutil.ControlPlaneOption{testutil.WithoutCRDs()}
	if auditLog != "" {
		opts = append(opts, testutil.WithAuditLog(auditLog))
	}
	cp, err := testutil.StartControlPlane(opts...)
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
	admin, err := client.New(cp.Config, client.Options{Scheme: testutil.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The farm's namespace exists first: with watchNamespaces, helm puts a RoleBinding there.
	if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	out := helm(t, append([]string{"install", "wf", chartDir, "--kubeconfig", path, "--namespace", "webfarm-system", "--create-namespace"}, helmArgs...)...)
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install:\n%s", out)
	}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: "webfarm-system", Name: "wf"}, &appsv1.Deployment{}); err != nil {
		t.Fatalf("the operator's Deployment: %v", err)
	}
	// The chart's CRDs are served (established a moment after helm created them).
	for _, list := range []client.ObjectList{&v1.WebFarmList{}, &v1.AppPoolList{}, &v1.CachePolicyList{}} {
		testutil.Eventually(t, 30*time.Second, func() error { return admin.List(context.Background(), list) })
	}

	// Run the controllers as the chart's ServiceAccount.
	asOperator := rest.CopyConfig(cp.Config)
	asOperator.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:webfarm-system:wf"}
	mgr, err := ctrl.NewManager(asOperator, ctrl.Options{Scheme: testutil.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: controllers.CacheOptions(watch),
		// Each test of this package runs its own manager with the same controllers.
		Controller: config.Controller{SkipNameValidation: &skipNameValidation}})
	if err != nil {
		t.Fatal(err)
	}
	// The operator as its binary assembles it, here without collectors (no
	// Prometheus, no frontends' statistics); linking it whole registers every
	// metric the binary serves, which TestEveryQueriedMetricExists reads.
	// Its pools isolated, as the chart's default flags ask (networkPolicy.isolatePools).
	isolation := &model.Isolation{OperatorNamespace: "webfarm-system",
		OperatorPodLabels: map[string]string{"app.kubernetes.io/name": "webfarm-operator", "app.kubernetes.io/instance": "wf"}}
	// The control CA, loaded (here: created) as the binary does, with the
	// operator's rights.
	operatorClient, err := client.New(asOperator, client.Options{Scheme: testutil.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ca, err := identity.LoadOrCreateCA(context.Background(), operatorClient, types.NamespacedName{Namespace: "webfarm-system", Name: "wf-control-ca"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	authority, err := identity.NewAuthority(ca, []string{"wf-xds.webfarm-system.svc"}, time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := operator.Setup(mgr, model.Platform{Images: model.Images{Envoy: "envoy", Nginx: "nginx", CacheAgent: "agent", PullPolicy: "IfNotPresent"}, XDSHost: "wf-xds.webfarm-system.svc", XDSPort: 18000, ControlTLS: true,
		Isolation: isolation},
		operator.Options{Controllers: controllers.ControllerOptions{MaxConcurrentReconciles: 2, Identity: authority}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	pool := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "www"}, Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "shop:1", Port: 3000}}}
	cachePolicy := &v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "static"}}
	farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "www", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "www", CachePolicy: "static"}, {PathPrefix: "/missing", AppPool: "gone"}}},
	}}}
	for _, o := range []client.Object{pool, cachePolicy, farm} {
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
		if err := admin.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "web-frontend-identity"}, &corev1.Secret{}); err != nil {
			return fmt.Errorf("the farm's identity: %w", err)
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

	t.Cleanup(func() { helm(t, "uninstall", "wf", "--kubeconfig", path, "--namespace", "webfarm-system") })
	return admin, asOperator
}

var skipNameValidation = true

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
