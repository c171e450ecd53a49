package chart

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/collect/autoscaler"
	"webfarm.dev/operator/internal/collect/cpumonitor"
	"webfarm.dev/operator/internal/collect/workermemory"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// The chart's monitoring for the Prometheus Operator: its alerting rules
// (one file, checked and unit-tested by the real promtool), the
// PrometheusRule, PodMonitor and ServiceMonitor that serve them and find the
// farms, and a check that every metric the rules, the dashboard and the
// autoscaler query is one something real produces.

var (
	rulesFile     = filepath.Join(chartDir, "rules", "webfarm.rules.yaml")
	rulesTestFile = filepath.Join("testdata", "webfarm.rules.test.yaml")
)

// ruleGroups is the part of a Prometheus rule file the tests read.
type ruleGroups struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert string `json:"alert"`
			Expr  string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

func readRules(t *testing.T) ruleGroups {
	t.Helper()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules ruleGroups
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	return rules
}

func promtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(testutil.Tool(t, "WEBFARM_PROMTOOL", "promtool"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestTheAlertingRules(t *testing.T) {
	rules := readRules(t)
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
		}
	}
	if len(alerts) < 9 {
		t.Fatalf("alerts %v: the rule file lost some", alerts)
	}

	t.Run("promtool accepts the rule file", func(t *testing.T) {
		promtool(t, "check", "rules", rulesFile)
	})

	t.Run("each alert fires on the series that should trigger it, and not otherwise", func(t *testing.T) {
		promtool(t, "test", "rules", rulesTestFile)
	})

	t.Run("every alert has a unit test in which it fires", func(t *testing.T) {
		raw, err := os.ReadFile(rulesTestFile)
		if err != nil {
			t.Fatal(err)
		}
		var tests struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string           `json:"alertname"`
					ExpAlerts []map[string]any `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(raw, &tests); err != nil {
			t.Fatal(err)
		}
		fires := map[string]bool{}
		for _, tc := range tests.Tests {
			for _, a := range tc.AlertRuleTest {
				fires[a.Alertname] = fires[a.Alertname] || len(a.ExpAlerts) > 0
			}
		}
		for _, a := range alerts {
			if !fires[a] {
				t.Errorf("no test of %s expects it to fire", a)
			}
		}
	})

	t.Run("the operations guide lists every alert and points to the file instead of copying it", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "operations.md"))
		if err != nil {
			t.Fatal(err)
		}
		doc := string(raw)
		for _, a := range alerts {
			if !strings.Contains(doc, "`"+a+"`") {
				t.Errorf("docs/operations.md does not name %s", a)
			}
		}
		if !strings.Contains(doc, "charts/webfarm-operator/rules/webfarm.rules.yaml") || strings.Contains(doc, "\ngroups:\n") {
			t.Errorf("docs/operations.md should link the rule file and hold no copy of its groups")
		}
	})
}

// The scrape configuration the operations guide gives a Prometheus without
// the Prometheus Operator is one Prometheus accepts.
func TestTheGuidesPrometheusConfigurationIsValid(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(raw), "**Without the Prometheus Operator**")
	_, block, ok := strings.Cut(after, "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed || !strings.Contains(block, "scrape_configs:") {
		t.Fatalf("docs/operations.md has no scrape configuration after \"Without the Prometheus Operator\"")
	}
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	// The files it names are the Prometheus pod's, absent here.
	promtool(t, "check", "config", "--syntax-only", path)
}

// mustOneStrict decodes the one rendered object of a kind into its API
// type, refusing a field the type does not have (a misspelt field would
// otherwise be dropped by the API server without a word).
func mustOneStrict(t *testing.T, objs rendered, kind string, into any) {
	t.Helper()
	if len(objs[kind]) != 1 {
		t.Fatalf("%d %s objects, want 1", len(objs[kind]), kind)
	}
	if err := yaml.UnmarshalStrict(objs[kind][0], into); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
}

func TestTheMonitoringObjects(t *testing.T) {
	t.Run("there is no monitoring object by default", func(t *testing.T) {
		objs := render(t)
		for _, kind := range []string{"PodMonitor", "ServiceMonitor", "PrometheusRule"} {
			if len(objs[kind]) != 0 {
				t.Errorf("%d %s objects", len(objs[kind]), kind)
			}
		}
	})

	on := []string{"--set", "monitoring.podMonitors.enabled=true", "--set", "monitoring.cadvisor.enabled=true",
		"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.labels.release=kube-prometheus-stack",
		"--set", "monitoring.labels.app\\.kubernetes\\.io/instance=other"}
	objs := render(t, on...)
	var (
		pm   monitoringv1.PodMonitor
		sm   monitoringv1.ServiceMonitor
		rule monitoringv1.PrometheusRule
	)
	mustOneStrict(t, objs, "PodMonitor", &pm)
	mustOneStrict(t, objs, "ServiceMonitor", &sm)
	mustOneStrict(t, objs, "PrometheusRule", &rule)

	t.Run("every object carries the Prometheus' selector label, which cannot replace the chart's own", func(t *testing.T) {
		for _, o := range []struct {
			metav1.TypeMeta
			metav1.ObjectMeta
		}{{pm.TypeMeta, pm.ObjectMeta}, {sm.TypeMeta, sm.ObjectMeta}, {rule.TypeMeta, rule.ObjectMeta}} {
			if o.APIVersion != "monitoring.coreos.com/v1" || o.Namespace != "webfarm-system" ||
				o.Labels["release"] != "kube-prometheus-stack" || o.Labels["app.kubernetes.io/instance"] != "wf" {
				t.Errorf("%s %s in %q, labels %v", o.Kind, o.APIVersion, o.Namespace, o.Labels)
			}
		}
	})

	t.Run("the PrometheusRule holds exactly the rule file's groups", func(t *testing.T) {
		raw, err := os.ReadFile(rulesFile)
		if err != nil {
			t.Fatal(err)
		}
		var file monitoringv1.PrometheusRuleSpec
		if err := yaml.UnmarshalStrict(raw, &file); err != nil {
			t.Fatalf("rules/webfarm.rules.yaml is no PrometheusRule spec: %v", err)
		}
		if rule.Name != "wf" || len(file.Groups) == 0 || !reflect.DeepEqual(rule.Spec, file) {
			t.Errorf("PrometheusRule %s groups differ from rules/webfarm.rules.yaml", rule.Name)
		}
	})

	t.Run("the PodMonitor scrapes Envoy's statistics on the status port of the frontend pods the operator generates", func(t *testing.T) {
		if pm.Name != "wf-frontends" || len(pm.Spec.PodMetricsEndpoints) != 1 {
			t.Fatalf("PodMonitor %s endpoints %+v", pm.Name, pm.Spec.PodMetricsEndpoints)
		}
		ep := pm.Spec.PodMetricsEndpoints[0]
		if ep.Port == nil || ep.Path != vocabulary.FrontendMetricsPath || ep.Interval != "15s" {
			t.Fatalf("endpoint %+v, want a port, path %s every 15s", ep, vocabulary.FrontendMetricsPath)
		}
		selector, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
		if err != nil || selector.Empty() {
			t.Fatalf("selector %v: %v", pm.Spec.Selector, err)
		}
		farm, err := model.ResolveFarm(&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}, model.Platform{})
		if err != nil {
			t.Fatal(err)
		}
		pod := k8s.Frontend(farm, []byte("{}")).Deployment.Spec.Template
		if !selector.Matches(labels.Set(pod.Labels)) {
			t.Errorf("the selector %v does not match a frontend pod's labels %v", selector, pod.Labels)
		}
		port := map[string]int32{}
		for _, p := range pod.Spec.Containers[0].Ports {
			port[*p.Name] = *p.ContainerPort
		}
		if port[*ep.Port] != vocabulary.FrontendStatusPort {
			t.Errorf("port %q is %d in the frontend pod (%v), want Envoy's status port %d", *ep.Port, port[*ep.Port], port, vocabulary.FrontendStatusPort)
		}
		for _, component := range []string{vocabulary.ComponentPool, vocabulary.ComponentCache} {
			other := k8s.SelectorLabels(component, "web")
			other[vocabulary.LabelComponent], other[vocabulary.LabelManagedBy] = component, vocabulary.ManagedBy
			if selector.Matches(labels.Set(other)) {
				t.Errorf("the selector also matches %s pods", component)
			}
		}
		want := []monitoringv1.RelabelConfig{{SourceLabels: []monitoringv1.LabelName{"__meta_kubernetes_pod_label_app_kubernetes_io_instance"}, TargetLabel: "webfarm_farm"}}
		if !reflect.DeepEqual(ep.RelabelConfigs, want) {
			t.Errorf("relabelings %+v, want %+v: the farm's name as webfarm_farm (namespace and pod are the Prometheus Operator's own)", ep.RelabelConfigs, want)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		any  bool
		want []string
	}{
		{name: "the frontends of every namespace are scraped by default", any: true},
		{name: "with watchNamespaces, the frontends of those namespaces are scraped", args: []string{"--set", "watchNamespaces={shop,blog}"}, want: []string{"shop", "blog"}},
		{name: "a namespaceSelector of the values wins", args: []string{"--set", "watchNamespaces={shop,blog}", "--set", "monitoring.podMonitors.namespaceSelector.matchNames={shop}"}, want: []string{"shop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pm monitoringv1.PodMonitor
			mustOneStrict(t, render(t, append([]string{"--set", "monitoring.podMonitors.enabled=true"}, tc.args...)...), "PodMonitor", &pm)
			if ns := pm.Spec.NamespaceSelector; ns.Any != tc.any || !reflect.DeepEqual(ns.MatchNames, tc.want) {
				t.Errorf("namespaceSelector %+v, want any %v, matchNames %v", ns, tc.any, tc.want)
			}
		})
	}

	t.Run("the cAdvisor ServiceMonitor keeps the kubelets' CPU and memory figures with their own labels, and nothing else", func(t *testing.T) {
		if sm.Name != "wf-cadvisor" || !reflect.DeepEqual(sm.Spec.NamespaceSelector.MatchNames, []string{"kube-system"}) ||
			sm.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "kubelet" || sm.Spec.JobLabel != "app.kubernetes.io/name" || len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("ServiceMonitor %s %+v", sm.Name, sm.Spec)
		}
		ep := sm.Spec.Endpoints[0]
		if ep.Port != "https-metrics" || ep.Scheme != "https" || ep.Path != "/metrics/cadvisor" || !ep.HonorLabels ||
			//nolint:staticcheck // authorization takes a Secret; Prometheus' own service-account token is a file
			ep.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
			ep.TLSConfig == nil || ep.TLSConfig.InsecureSkipVerify == nil || !*ep.TLSConfig.InsecureSkipVerify {
			t.Errorf("endpoint %+v", ep)
		}
		if r := ep.MetricRelabelConfigs; len(r) != 1 || r[0].Action != "keep" || !reflect.DeepEqual(r[0].SourceLabels, []monitoringv1.LabelName{"__name__"}) {
			t.Fatalf("metricRelabelings %+v, want one keep of __name__", r)
		}
		keep := regexp.MustCompile("^(?:" + ep.MetricRelabelConfigs[0].Regex + ")$")
		for _, name := range cadvisorMetrics(t) {
			if !keep.MatchString(name) {
				t.Errorf("the operator queries %s, which the ServiceMonitor drops", name)
			}
		}
		if keep.MatchString("container_memory_rss") {
			t.Errorf("the ServiceMonitor keeps cAdvisor's other metrics")
		}
	})
}

// cAdvisorMetrics are the metrics of the kubelets' cAdvisor endpoint
// (/metrics/cadvisor) that the operator's default queries read: no process
// here runs a kubelet, so they are named, with where they come from.
var cAdvisorMetrics = map[string]string{
	"container_cpu_usage_seconds_total":  "the kubelet's cAdvisor (/metrics/cadvisor): the CPU monitor's and the autoscaler's CPU query",
	"container_memory_working_set_bytes": "the kubelet's cAdvisor (/metrics/cadvisor): recycling on a worker's memory",
}

// cadvisorQueries are the operator's queries of cAdvisor's figures: the
// autoscaler's default CPU query, the CPU monitor's and memory recycling's.
func cadvisorQueries(t *testing.T) []query {
	return []query{
		{"the autoscaler's CPU query", autoscalerQuery(t, autoscaler.DefaultCPUQuery)},
		{"the CPU monitor's query", cpumonitor.Query("shop|blog")},
		{"memory recycling's query", workermemory.Query("shop|blog")},
	}
}

// cadvisorMetrics are the cAdvisor metrics the operator's queries name.
func cadvisorMetrics(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, n := range queriedMetrics(t, cadvisorQueries(t)) {
		names = append(names, n.name)
	}
	return names
}

// query is a PromQL expression and where it is written.
type query struct{ where, expr string }

type queried struct{ name, where string }

// queriedMetrics are the metrics the expressions select, as Prometheus' own
// parser (bin/promql-metrics) finds them. An expression it cannot parse, or
// that names no metric, fails the test.
func queriedMetrics(t *testing.T, queries []query) []queried {
	t.Helper()
	exprs := make([]string, len(queries))
	for i, q := range queries {
		exprs[i] = q.expr
	}
	in, err := json.Marshal(exprs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.Tool(t, "WEBFARM_PROMQL_METRICS", "promql-metrics"))
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("promql-metrics: %v", err)
	}
	var results []struct {
		Metrics []string `json:"metrics"`
		Error   string   `json:"error"`
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(queries) {
		t.Fatalf("promql-metrics answered %s: %v", out, err)
	}
	var names []queried
	for i, r := range results {
		if r.Error != "" || len(r.Metrics) == 0 {
			t.Errorf("%s: %q: %s (metrics %v)", queries[i].where, queries[i].expr, r.Error, r.Metrics)
		}
		for _, n := range r.Metrics {
			names = append(names, queried{n, queries[i].where})
		}
	}
	return names
}

// autoscalerQuery is one of the autoscaler's query templates for a pool.
func autoscalerQuery(t *testing.T, text string) string {
	t.Helper()
	var b strings.Builder
	if err := template.Must(template.New("q").Option("missingkey=error").Parse(text)).Execute(&b, map[string]string{"Namespace": "shop", "Pool": "www"}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	grafanaIntervals = regexp.MustCompile(`\$__(?:rate_interval|interval|range)\b`)
	grafanaVariables = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	labelValues      = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)
)

// promQL is a dashboard query as Prometheus receives it: Grafana's interval
// variables are durations, the others text (they appear only in strings).
func promQL(expr string) string {
	return grafanaVariables.ReplaceAllString(grafanaIntervals.ReplaceAllString(expr, "5m"), "x")
}

// dashboardQueries are the PromQL of every panel and variable of the dashboard.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "webfarm.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboards/webfarm.json: %v", err)
	}
	var queries []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries = append(queries, query{"the dashboard's panel " + p.Title, promQL(tg.Expr)})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(selector, label)", v.Name, q.Query)
			continue
		}
		queries = append(queries, query{"the dashboard's variable " + v.Name, promQL(m[1])})
	}
	if len(queries) < 20 {
		t.Fatalf("the dashboard has only %d queries", len(queries))
	}
	return queries
}

// TestEveryQueriedMetricExists: each metric that an alerting rule, a panel or
// variable of the dashboard, or one of the autoscaler's default queries
// names is one the operator registers, a real Envoy frontend serves, or the
// kubelet's cAdvisor serves. A renamed metric fails here, not silently in a
// user's Prometheus.
func TestEveryQueriedMetricExists(t *testing.T) {
	var queries []query
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			queries = append(queries, query{"the alert " + r.Alert, r.Expr})
		}
	}
	queries = append(queries, dashboardQueries(t)...)
	queries = append(queries, query{"the autoscaler's requests query", autoscalerQuery(t, autoscaler.DefaultRequestsQuery)})
	queries = append(queries, cadvisorQueries(t)...)

	envoyStats := envoyMetrics(t)
	from := map[string]map[string]bool{"the operator": {}, "Envoy": {}, "cAdvisor": {}}
	for _, q := range queriedMetrics(t, queries) {
		switch {
		case operatorRegisters(q.name):
			from["the operator"][q.name] = true
		case envoyStats[q.name]:
			from["Envoy"][q.name] = true
		case cAdvisorMetrics[q.name] != "":
			from["cAdvisor"][q.name] = true
		default:
			t.Errorf("%s queries %s, which neither the operator registers, nor a frontend's Envoy serves, nor cAdvisor", q.where, q.name)
		}
	}
	for source, names := range from {
		if len(names) == 0 {
			t.Errorf("no query reads a metric of %s: the check of that source checks nothing", source)
		}
		t.Logf("%d queries, %d metrics of %s: %v", len(queries), len(names), source, slices.Sorted(maps.Keys(names)))
	}
}

// operatorRegisters says whether the operator's metrics registry (the one
// its /metrics serves: its own metrics and controller-runtime's) holds a
// metric of that name, or a histogram whose series it is. A metric vector
// without series yet is not gathered, so the registry is asked to take a
// new metric of the name: it refuses a name it has.
func operatorRegisters(name string) bool {
	has := func(name string) bool {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "a probe of the name"})
		if err := crmetrics.Registry.Register(probe); err != nil {
			return true
		}
		crmetrics.Registry.Unregister(probe)
		return false
	}
	if has(name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && has(base) {
			return true
		}
	}
	return false
}

func TestOperatorRegistersKnowsTheOperatorsMetrics(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"webfarm_pool_requests_total", true},
		{"webfarm_xds_envoys", true},
		{"webfarm_pool_cold_start_seconds_bucket", true},
		{"controller_runtime_reconcile_errors_total", true},
		{"webfarm_pool_request_total", false},
		{"envoy_cluster_upstream_rq_total", false},
	} {
		// Twice: a probe must leave the registry as it found it.
		for range 2 {
			if got := operatorRegisters(tc.name); got != tc.want {
				t.Errorf("operatorRegisters(%s) = %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

// envoyMetrics are the metric names a real Envoy serves on
// /stats/prometheus when it runs a farm's rendered frontend with one pool:
// each family, and a histogram's series.
func envoyMetrics(t *testing.T) map[string]bool {
	t.Helper()
	wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "www", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "www"}}},
	}}}
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	farm, err := model.ResolveFarm(wf, platform)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "www"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	routing, err := envoy.FarmRouting(farm, map[string]model.Pool{"www": pool},
		endpoints.Backends{vocabulary.PoolCluster("www"): {{Address: "127.0.0.1", Port: 9}}})
	if err != nil {
		t.Fatal(err)
	}
	fe, err := localenvoy.Start(testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), t.TempDir(), farm, routing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fe.Stop)
	resp, err := http.Get(fe.AdminURL + vocabulary.FrontendMetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Prometheus 3 refuses a scrape whose Content-Type it does not know.
	if media, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || media != "text/plain" {
		t.Fatalf("Envoy serves its statistics as %q, not Prometheus' text format", resp.Header.Get("Content-Type"))
	}
	names, err := metricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !names["envoy_cluster_upstream_rq_total"] {
		t.Fatalf("Envoy serves no per-cluster request counter: %d names", len(names))
	}
	return names
}

// metricFamilies reads the names of a Prometheus text exposition's
// families (# TYPE lines) and of a histogram's or summary's series.
func metricFamilies(r io.Reader) (map[string]bool, error) {
	names := map[string]bool{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 4 || fields[0] != "#" || fields[1] != "TYPE" {
			continue
		}
		names[fields[2]] = true
		switch fields[3] {
		case "histogram":
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[fields[2]+s] = true
			}
		case "summary":
			for _, s := range []string{"_sum", "_count"} {
				names[fields[2]+s] = true
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no metric family")
	}
	return names, nil
}

func TestQueriedMetricsFindsTheMetricsOfAnExpression(t *testing.T) {
	got := queriedMetrics(t, []query{
		{"a rate over Grafana's interval", promQL(`sum by (namespace, pool) (rate(webfarm_pool_requests_total{namespace=~"$namespace", pool=~"${pool}"}[$__rate_interval]))`)},
		{"a ratio with a grouping after the aggregation", `sum(rate(a_total[5m])) by (x) / on (x) group_left sum(rate(b_total{y="by (z)"}[5m])) by (x)`},
		{"a selector by __name__, numbers and keywords", `{__name__="c", job="x"} offset 5m > bool 0.5 and inf_metric * 1e3`},
	})
	var names []string
	for _, q := range got {
		names = append(names, q.name)
	}
	slices.Sort(names)
	if want := []string{"a_total", "b_total", "c", "inf_metric", "webfarm_pool_requests_total"}; !reflect.DeepEqual(names, want) {
		t.Errorf("metrics %v, want %v", names, want)
	}
}
