package benchkit

import (
	"strings"
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	out := "Running 1s test @ http://127.0.0.1:1\n" + ResultMarker +
		`{"requests":1000,"duration_us":1000000,"bytes":15360000,"errors":{"connect":0,"read":0,"write":0,"status":2,"timeout":0},"latency_us":{"p50":500,"p90":900,"p99":1500,"max":3000}}` + "\n"
	r, err := ParseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 1000 || r.Errors.Status != 2 || r.Latency.P99 != 1500 {
		t.Errorf("parsed %+v", r)
	}
	if r.RequestsPerSecond() != 1000 || r.P50() != 500*time.Microsecond || r.P99() != 1500*time.Microsecond {
		t.Errorf("figures %.0f req/s, p50 %s, p99 %s", r.RequestsPerSecond(), r.P50(), r.P99())
	}
	if _, err := ParseWrk("no result here\n"); err == nil {
		t.Error("output without a result line parsed")
	}
}

func TestWrkScript(t *testing.T) {
	script := WrkScript("/hot/15kb.html")
	for _, s := range []string{`wrk.path = "/hot/15kb.html"`, "function done(", ResultMarker, `"p99":%d`} {
		if !strings.Contains(script, s) {
			t.Errorf("the script lacks %q", s)
		}
	}
}
