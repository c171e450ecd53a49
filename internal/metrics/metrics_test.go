package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestAKnownPoolsCountersStartAtZeroAndGoWithIt(t *testing.T) {
	WorkerFailures.Reset()
	KnowPool("shop", "catalog")
	if n := testutil.CollectAndCount(WorkerFailures); n != 1 {
		t.Fatalf("after KnowPool: %d series of webfarm_pool_worker_failures_total, want 1", n)
	}
	if v := testutil.ToFloat64(WorkerFailures.WithLabelValues("shop", "catalog")); v != 0 {
		t.Errorf("a known pool's failures start at %v, want 0", v)
	}
	KnowPool("shop", "catalog") // every reconcile: it must not count
	WorkerFailures.WithLabelValues("shop", "catalog").Add(3)
	if v := testutil.ToFloat64(WorkerFailures.WithLabelValues("shop", "catalog")); v != 3 {
		t.Errorf("after 3 failures the counter is %v, want 3", v)
	}
	ForgetPool("shop", "catalog")
	if n := testutil.CollectAndCount(WorkerFailures); n != 0 {
		t.Errorf("after ForgetPool: %d series, want 0", n)
	}
}

func TestAKnownCacheTiersCountersStartAtZero(t *testing.T) {
	hits := CacheCounter("webfarm_test_cache_hits_total", "hits, for the test")
	KnowCache("shop", "images")
	if v := testutil.ToFloat64(hits.WithLabelValues("shop", "images")); v != 0 || testutil.CollectAndCount(hits) != 1 {
		t.Errorf("a known cache tier's counter: %v in %d series, want one at 0", v, testutil.CollectAndCount(hits))
	}
	ForgetCache("shop", "images")
	if n := testutil.CollectAndCount(hits); n != 0 {
		t.Errorf("after ForgetCache: %d series, want 0", n)
	}
}

func TestAForgottenFarmsSeriesGo(t *testing.T) {
	figure := FarmGauge("webfarm_test_frontend_figure", "a figure, for the test")
	figure.WithLabelValues("shop", "www").Set(2.5)
	figure.WithLabelValues("shop", "blog").Set(1)
	ForgetFarm("shop", "www")
	if n := testutil.CollectAndCount(figure); n != 1 {
		t.Errorf("after ForgetFarm: %d series, want the other farm's 1", n)
	}
}
