package chart

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"webfarm.dev/operator/internal/testutil"
)

// The chart's optional parts: the notes printed after an install, a
// Prometheus Operator ServiceMonitor and a Grafana dashboard (the farms'
// monitoring objects are in monitoring_test.go).

func TestTheChartLintsWithItsOptionsOn(t *testing.T) {
	helm(t, "lint", "--strict", chartDir,
		"--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.labels.release=kube-prometheus-stack",
		"--set", "grafanaDashboard.enabled=true", "--set", "grafanaDashboard.annotations.grafana_folder=Web farms",
		"--set", "monitoring.podMonitors.enabled=true", "--set", "monitoring.cadvisor.enabled=true",
		"--set", "monitoring.prometheusRule.enabled=true", "--set", "monitoring.labels.release=kube-prometheus-stack")
}

// notes renders the chart's NOTES.txt with the real helm and no cluster:
// `helm install --dry-run=client` still asks the cluster for its version and
// `helm template` prints no notes, so a copy of the chart gets one more
// template, a ConfigMap holding the rendered notes.
func notes(t *testing.T, release, namespace string, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "webfarm-operator")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	probe := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rendered-notes\ndata:\n" +
		"  NOTES.txt: {{ include (print .Template.BasePath \"/NOTES.txt\") . | quote }}\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "zz-notes-probe.yaml"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	out := helm(t, append([]string{"template", release, dir, "--namespace", namespace, "--kube-version", "1.36.3",
		"--show-only", "templates/zz-notes-probe.yaml"}, args...)...)
	var cm corev1.ConfigMap
	mustUnmarshal(t, []byte(out), &cm)
	text := cm.Data["NOTES.txt"]
	if strings.TrimSpace(text) == "" {
		t.Fatalf("empty notes:\n%s", out)
	}
	return text
}

func TestTheNotesTellHowToUseTheRelease(t *testing.T) {
	for _, tc := range []struct {
		name          string
		release, ns   string
		args          []string
		want, wantNot []string
	}{
		{
			name:    "the notes name the release, how to check it, the samples, the metrics and the CRDs' upgrade",
			release: "wf", ns: "webfarm-system", args: []string{"--set", "metrics.secure=false"},
			want: []string{
				"release wf in namespace webfarm-system",
				"kubectl -n webfarm-system get deploy wf",
				"apply -f config/samples/", "kubectl get web -A",
				"/metrics on port 8080", "headless Service wf-metrics",
				"http://wf-metrics.webfarm-system.svc:8080/metrics", "app.kubernetes.io/component=frontend",
				"CRDs: installed and upgraded with this release", "remain after helm uninstall",
				"prometheus.url is empty",
			},
			wantNot: []string{"ServiceMonitor", "dashboard", "metrics-reader", "https://"},
		},
		{
			name:    "the notes follow the release's name and namespace and the metrics port",
			release: "farms", ns: "ops", args: []string{"--set", "metrics.port=9100", "--set", "metrics.secure=false", "--set", "prometheus.url=http://prom:9090"},
			want: []string{
				"release farms in namespace ops", "kubectl -n ops get deploy farms",
				"/metrics on port 9100", "http://farms-metrics.ops.svc:9100/metrics",
			},
			wantNot: []string{"wf", "webfarm-system", "8080", "prometheus.url is empty"},
		},
		{
			name:    "with secure metrics the notes give the HTTPS address and the ClusterRole Prometheus needs",
			release: "wf", ns: "webfarm-system", args: []string{"--set", "metrics.secure=true"},
			want:    []string{"https://wf-metrics.webfarm-system.svc:8080/metrics", "ClusterRole wf-metrics-reader"},
			wantNot: []string{"http://"},
		},
		{
			name:    "with the CRDs left to someone else the notes say to apply them first",
			release: "wf", ns: "webfarm-system", args: []string{"--set", "crds.enabled=false"},
			want:    []string{"crds.enabled is off: apply the CRDs of version"},
			wantNot: []string{"installed and upgraded with this release"},
		},
		{
			name:    "the notes name the ServiceMonitor and the dashboard when they are on",
			release: "wf", ns: "webfarm-system",
			args: []string{"--set", "serviceMonitor.enabled=true", "--set", "serviceMonitor.interval=30s", "--set", "grafanaDashboard.enabled=true"},
			want: []string{"ServiceMonitor wf scrapes /metrics every 30s", "ConfigMap wf-dashboard"},
		},
		{
			name:    "the notes name the PodMonitor, the cAdvisor ServiceMonitor and the PrometheusRule when they are on",
			release: "wf", ns: "webfarm-system",
			args: []string{"--set", "monitoring.podMonitors.enabled=true", "--set", "monitoring.podMonitors.interval=30s",
				"--set", "monitoring.cadvisor.enabled=true", "--set", "monitoring.prometheusRule.enabled=true"},
			want: []string{"PodMonitor wf-frontends scrapes the farms' Envoy frontends every 30s",
				"ServiceMonitor wf-cadvisor scrapes the kubelets' container CPU counter every 15s", "PrometheusRule wf holds the alerting rules"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Join(strings.Fields(notes(t, tc.release, tc.ns, tc.args...)), " ")
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the notes lack %q:\n%s", w, text)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(text, w) {
					t.Errorf("the notes have %q:\n%s", w, text)
				}
			}
		})
	}
}

// serviceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor the
// chart writes.
type serviceMonitor struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port            string         `json:"port"`
			Path            string         `json:"path"`
			Interval        string         `json:"interval"`
			Scheme          string         `json:"scheme"`
			HonorLabels     bool           `json:"honorLabels"`
			BearerTokenFile string         `json:"bearerTokenFile"`
			TLSConfig       map[string]any `json:"tlsConfig"`
		} `json:"endpoints"`
	} `json:"spec"`
}

func TestTheServiceMonitor(t *testing.T) {
	t.Run("there is no ServiceMonitor by default", func(t *testing.T) {
		if got := render(t)["ServiceMonitor"]; len(got) != 0 {
			t.Errorf("%d ServiceMonitors", len(got))
		}
	})

	t.Run("the ServiceMonitor scrapes /metrics on the metrics Service's port named metrics, and no other Service", func(t *testing.T) {
		objs := render(t, "--set", "serviceMonitor.enabled=true", "--set", "metrics.port=9100")
		var sm serviceMonitor
		mustOne(t, objs, "ServiceMonitor", &sm)
		if sm.APIVersion != "monitoring.coreos.com/v1" || sm.Metadata.Namespace != "webfarm-system" {
			t.Errorf("ServiceMonitor %s in %q", sm.APIVersion, sm.Metadata.Namespace)
		}
		if !reflect.DeepEqual(sm.Spec.NamespaceSelector.MatchNames, []string{"webfarm-system"}) {
			t.Errorf("namespaceSelector %v", sm.Spec.NamespaceSelector.MatchNames)
		}
		if len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("endpoints %+v", sm.Spec.Endpoints)
		}
		ep := sm.Spec.Endpoints[0]
		if ep.Port != "metrics" || ep.Path != "/metrics" || ep.Interval != "15s" || !ep.HonorLabels {
			t.Errorf("endpoint %+v: want port metrics, /metrics, 15s, honorLabels (the pool metrics' own namespace label)", ep)
		}
		selector, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || selector.Empty() {
			t.Fatalf("selector %v: %v", sm.Spec.Selector, err)
		}
		var scraped []corev1.Service
		for _, doc := range objs["Service"] {
			var svc corev1.Service
			mustUnmarshal(t, doc, &svc)
			if !selector.Matches(labels.Set(svc.Labels)) {
				continue
			}
			for _, p := range svc.Spec.Ports {
				if p.Name == ep.Port {
					scraped = append(scraped, svc)
				}
			}
		}
		if len(scraped) != 1 || scraped[0].Name != "wf-metrics" || scraped[0].Spec.ClusterIP != corev1.ClusterIPNone {
			t.Fatalf("the ServiceMonitor scrapes %d Services (%v), want the headless wf-metrics", len(scraped), scraped)
		}
		// The Service's port leads to the operator's metrics listener.
		var d appsv1.Deployment
		mustUnmarshal(t, objs["Deployment"][0], &d)
		port := scraped[0].Spec.Ports[0]
		found := false
		for _, cp := range d.Spec.Template.Spec.Containers[0].Ports {
			found = found || (cp.Name == port.TargetPort.String() && cp.ContainerPort == 9100 && port.Port == 9100)
		}
		if !found || !contains(d.Spec.Template.Spec.Containers[0].Args, "--metrics-bind-address=:9100") {
			t.Errorf("the Service's port %+v does not reach the operator's metrics on 9100", port)
		}
	})

	for _, tc := range []struct {
		name                   string
		args                   []string
		scheme, interval, file string
		tls                    map[string]any
		labels                 map[string]string
	}{
		{
			name:   "plain metrics are scraped over HTTP without a token",
			args:   []string{"--set", "metrics.secure=false"},
			scheme: "http", interval: "15s",
		},
		{
			name:   "secure metrics are scraped over HTTPS with Prometheus' own token, trusting the self-signed certificate",
			args:   []string{"--set", "metrics.secure=true"},
			scheme: "https", interval: "15s", file: "/var/run/secrets/kubernetes.io/serviceaccount/token",
			tls: map[string]any{"insecureSkipVerify": true},
		},
		{
			name: "the scheme, token file and TLS settings of the values are passed through",
			args: []string{"--set", "metrics.secure=true", "--set", "serviceMonitor.scheme=https",
				"--set", "serviceMonitor.bearerTokenFile=/etc/prometheus/token",
				"--set", "serviceMonitor.tlsConfig.serverName=wf-metrics", "--set", "serviceMonitor.tlsConfig.ca.secret.name=operator-ca",
				"--set", "serviceMonitor.tlsConfig.ca.secret.key=ca.crt"},
			scheme: "https", interval: "15s", file: "/etc/prometheus/token",
			tls: map[string]any{"serverName": "wf-metrics", "ca": map[string]any{"secret": map[string]any{"name": "operator-ca", "key": "ca.crt"}}},
		},
		{
			name: "the interval and extra labels come from the values, which cannot replace the chart's own labels",
			args: []string{"--set", "metrics.secure=false", "--set", "serviceMonitor.interval=1m",
				"--set", "serviceMonitor.labels.release=kube-prometheus-stack", "--set", "serviceMonitor.labels.app\\.kubernetes\\.io/instance=other"},
			scheme: "http", interval: "1m",
			labels: map[string]string{"release": "kube-prometheus-stack", "app.kubernetes.io/instance": "wf"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sm serviceMonitor
			mustOne(t, render(t, append([]string{"--set", "serviceMonitor.enabled=true"}, tc.args...)...), "ServiceMonitor", &sm)
			ep := sm.Spec.Endpoints[0]
			if ep.Scheme != tc.scheme || ep.Interval != tc.interval || ep.BearerTokenFile != tc.file || !reflect.DeepEqual(ep.TLSConfig, tc.tls) {
				t.Errorf("endpoint scheme %q interval %q token %q tls %v, want %q %q %q %v", ep.Scheme, ep.Interval, ep.BearerTokenFile, ep.TLSConfig, tc.scheme, tc.interval, tc.file, tc.tls)
			}
			for k, v := range tc.labels {
				if sm.Metadata.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, sm.Metadata.Labels[k], v)
				}
			}
		})
	}
}

// grafanaDashboard is the part of a Grafana dashboard's JSON the tests read.
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Datasource *grafanaDatasource `json:"datasource"`
			Query      json.RawMessage    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *grafanaDatasource       `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Panels     []grafanaPanel           `json:"panels"`
	Targets    []struct {
		Datasource *grafanaDatasource `json:"datasource"`
		Expr       string             `json:"expr"`
		RefID      string             `json:"refId"`
	} `json:"targets"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func (d *grafanaDatasource) isTheVariable() bool {
	return d != nil && d.Type == "prometheus" && d.UID == "${datasource}"
}

func TestTheGrafanaDashboard(t *testing.T) {
	t.Run("there is no dashboard by default", func(t *testing.T) {
		if got := render(t)["ConfigMap"]; len(got) != 0 {
			t.Errorf("%d ConfigMaps", len(got))
		}
	})

	raw, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "webfarm.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, label, value string
		args               []string
		annotations        map[string]string
	}{
		{name: "the dashboard's ConfigMap has Grafana's sidecar label and the chart's file", label: "grafana_dashboard", value: "1"},
		{
			name: "the sidecar's label, its value and the annotations come from the values", label: "grafana.example/dashboard", value: "yes",
			args:        []string{"--set", "grafanaDashboard.label=grafana.example/dashboard", "--set", "grafanaDashboard.labelValue=yes", "--set", "grafanaDashboard.annotations.grafana_folder=Web farms"},
			annotations: map[string]string{"grafana_folder": "Web farms"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cm corev1.ConfigMap
			mustOne(t, render(t, append([]string{"--set", "grafanaDashboard.enabled=true"}, tc.args...)...), "ConfigMap", &cm)
			if cm.Name != "wf-dashboard" || cm.Namespace != "webfarm-system" || cm.Labels[tc.label] != tc.value || cm.Labels["app.kubernetes.io/instance"] != "wf" {
				t.Errorf("ConfigMap %s/%s labels %v, want %s=%s", cm.Namespace, cm.Name, cm.Labels, tc.label, tc.value)
			}
			if tc.annotations != nil && !reflect.DeepEqual(cm.Annotations, tc.annotations) {
				t.Errorf("annotations %v, want %v", cm.Annotations, tc.annotations)
			}
			if len(cm.Data) != 1 || cm.Data["webfarm.json"] != strings.TrimRight(string(raw), "\n") {
				t.Errorf("the ConfigMap's data is not dashboards/webfarm.json (keys %d)", len(cm.Data))
			}
		})
	}

	t.Run("a sidecar label that is one of the chart's own labels is refused", func(t *testing.T) {
		out, err := helmMayFail(t, "template", "wf", chartDir, "--kube-version", "1.36.3",
			"--set", "grafanaDashboard.enabled=true", "--set", "grafanaDashboard.label=app.kubernetes.io/name")
		if err == nil || !strings.Contains(out, "grafanaDashboard.label app.kubernetes.io/name is one of the chart's own labels") {
			t.Errorf("helm template: %v\n%s", err, out)
		}
	})

	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboards/webfarm.json: %v", err)
	}

	t.Run("the dashboard is Web farms, uid webfarm, with its five rows", func(t *testing.T) {
		if d.UID != "webfarm" || d.Title != "Web farms" || d.SchemaVersion != 38 {
			t.Errorf("uid %q title %q schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
		}
		var rows []string
		for _, p := range d.Panels {
			if p.Type == "row" {
				rows = append(rows, p.Title)
				if len(p.Panels) != 0 {
					t.Errorf("row %s is collapsed: its panels would not be checked", p.Title)
				}
			}
		}
		if want := []string{"Farms", "Pools", "Cache tiers", "Autoscaling", "Operator"}; !reflect.DeepEqual(rows, want) {
			t.Errorf("rows %v, want %v", rows, want)
		}
	})

	t.Run("the panels query the datasource variable and do not overlap", func(t *testing.T) {
		ids := map[int]bool{}
		for i, p := range d.Panels {
			if ids[p.ID] {
				t.Errorf("panel id %d twice", p.ID)
			}
			ids[p.ID] = true
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("panel %q at %+v", p.Title, g)
			}
			for _, q := range d.Panels[:i] {
				h := q.GridPos
				if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
					t.Errorf("panels %q and %q overlap", q.Title, p.Title)
				}
			}
			if p.Type == "row" {
				continue
			}
			if !p.Datasource.isTheVariable() || len(p.Targets) == 0 {
				t.Errorf("panel %q: datasource %+v, %d queries", p.Title, p.Datasource, len(p.Targets))
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if !tg.Datasource.isTheVariable() || tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("panel %q: query %s datasource %+v", p.Title, tg.RefID, tg.Datasource)
				}
				refs[tg.RefID] = true
			}
		}
	})

	t.Run("the variables are the datasource, namespace, pool and cache policy", func(t *testing.T) {
		var names []string
		for _, v := range d.Templating.List {
			names = append(names, v.Name)
			switch {
			case v.Name == "datasource":
				if v.Type != "datasource" || string(v.Query) != `"prometheus"` {
					t.Errorf("datasource variable of type %s, query %s", v.Type, v.Query)
				}
			case v.Type != "query" || !v.Datasource.isTheVariable():
				t.Errorf("variable %s of type %s on %+v", v.Name, v.Type, v.Datasource)
			}
		}
		if want := []string{"datasource", "namespace", "pool", "cachepolicy"}; !reflect.DeepEqual(names, want) {
			t.Errorf("variables %v, want %v", names, want)
		}
	})
}

func mustOne(t *testing.T, objs rendered, kind string, into any) {
	t.Helper()
	if len(objs[kind]) != 1 {
		t.Fatalf("%d %s objects, want 1", len(objs[kind]), kind)
	}
	mustUnmarshal(t, objs[kind][0], into)
}

// helmMayFail runs helm like helm() but returns its failure.
func helmMayFail(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testutil.Tool(t, "WEBFARM_HELM", "helm"), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}
