package envoystats

import (
	"reflect"
	"strings"
	"testing"
)

// page is the shape of an Envoy 1.40 /stats/prometheus page.
const page = `# TYPE envoy_cluster_upstream_rq_pending_overflow counter
envoy_cluster_upstream_rq_pending_overflow{envoy_cluster_name="pool/slow"} 14
envoy_cluster_upstream_rq_pending_overflow{envoy_cluster_name="cache/static"} 3
# TYPE envoy_cluster_upstream_rq_total counter
envoy_cluster_upstream_rq_total{envoy_cluster_name="pool/slow"} 30
envoy_cluster_upstream_rq_total{envoy_cluster_name="pool/www"} 1000
envoy_cluster_upstream_rq_total{envoy_cluster_name="xds"} 7
# TYPE envoy_cluster_upstream_rq counter
envoy_cluster_upstream_rq{envoy_response_code="200",envoy_cluster_name="pool/slow"} 13
envoy_cluster_upstream_rq{envoy_response_code="599",envoy_cluster_name="pool/slow"} 3
envoy_cluster_upstream_rq{envoy_response_code="599",envoy_cluster_name="cache/static"} 1
# TYPE envoy_cluster_upstream_rq_xx counter
envoy_cluster_upstream_rq_xx{envoy_response_code_class="2",envoy_cluster_name="pool/www"} 990
envoy_cluster_upstream_rq_xx{envoy_response_code_class="5",envoy_cluster_name="pool/www"} 10
envoy_cluster_upstream_rq_xx{envoy_response_code_class="5",envoy_cluster_name="pool/slow"} 17
# TYPE envoy_cluster_upstream_rq_pending_active gauge
envoy_cluster_upstream_rq_pending_active{envoy_cluster_name="pool/slow"} 10
# TYPE envoy_cluster_upstream_rq_active gauge
envoy_cluster_upstream_rq_active{envoy_cluster_name="pool/slow"} 6
# TYPE envoy_cluster_endpoint_rq_total counter
envoy_cluster_endpoint_rq_total{envoy_cluster_name="pool/www",envoy_endpoint_address="10.0.0.5:8080"} 600
envoy_cluster_endpoint_rq_total{envoy_cluster_name="pool/www",envoy_endpoint_address="10.0.0.6:8080"} 400
envoy_cluster_endpoint_rq_total{envoy_cluster_name="cache/static",envoy_endpoint_address="10.0.0.9:8080"} 5
`

func TestParseReadsEachPoolsFigures(t *testing.T) {
	got, err := Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Pool{
		"slow": {QueueRejected: 14, QueueTimedOut: 3, Responses5xx: 17, Requests: 30, Waiting: 10, Active: 6},
		"www":  {Requests: 1000, Responses5xx: 10, PerWorker: map[string]uint64{"10.0.0.5:8080": 600, "10.0.0.6:8080": 400}},
	}
	if len(got) != len(want) {
		t.Fatalf("pools %v, want %v (cache and xds clusters are not pools)", got, want)
	}
	for name, w := range want {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("pool %s: %+v, want %+v", name, got[name], w)
		}
	}
}

func TestParseRefusesAPageThatIsNotPrometheusText(t *testing.T) {
	if _, err := Parse(strings.NewReader("envoy_cluster_upstream_rq_total{envoy_cluster_name=\"pool/x\" 1\n")); err == nil {
		t.Error("a malformed page parsed without error")
	}
}

func TestDelta(t *testing.T) {
	for _, tt := range []struct {
		name              string
		before, now, want uint64
	}{
		{"a counter that grew gives the growth", 10, 14, 4},
		{"an unchanged counter gives nothing", 14, 14, 0},
		{"a smaller reading is an Envoy that restarted: all of it is new", 14, 3, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Delta(tt.before, tt.now); got != tt.want {
				t.Errorf("Delta(%d, %d) = %d, want %d", tt.before, tt.now, got, tt.want)
			}
		})
	}
}
