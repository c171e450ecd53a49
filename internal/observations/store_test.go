package observations

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
)

func TestAWrittenCountLeavesTheStoreAndOneCountedMeanwhileStays(t *testing.T) {
	var s Store
	shop := key("web", "shop")
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	s.AddRefusals(shop, 9, 1, at)
	written, _ := s.Refusals(shop)
	s.AddRefusals(shop, 3, 0, at.Add(time.Second)) // while the status write was under way
	s.RefusalsWritten(shop, written)
	if got, ok := s.Refusals(shop); !ok || got.Rejected != 3 || got.TimedOut != 0 {
		t.Errorf("refusals left %+v (%v), want the 3 counted meanwhile", got, ok)
	}
	s.RefusalsWritten(shop, QueueRefusals{Rejected: 3})
	if got, ok := s.Refusals(shop); ok {
		t.Errorf("refusals left %+v, want none", got)
	}
}

func TestACacheTiersGrowthIsDueOnlyOncePublished(t *testing.T) {
	var s Store
	static := key("web", "static")
	s.AddCacheGrowth(static, v1.CacheCounters{Hits: 5})
	if due, ok := s.CacheTierDue(static); ok {
		t.Fatalf("due %+v before any publication", due)
	}
	s.PublishCacheTier(static, 2, 100)
	due, ok := s.CacheTierDue(static)
	if !ok || due.Grown.Hits != 5 || due.Objects != 2 || due.MemoryBytes != 100 {
		t.Fatalf("due %+v (%v), want 5 hits, 2 objects, 100 bytes", due, ok)
	}
	s.AddCacheGrowth(static, v1.CacheCounters{Hits: 1}) // not yet published
	s.CacheTierWritten(static, due)
	if due, _ := s.CacheTierDue(static); due.Grown != (v1.CacheCounters{}) || due.Objects != 2 {
		t.Errorf("due after the write %+v, want no growth and the use kept", due)
	}
	s.PublishCacheTier(static, 3, 100)
	if due, _ := s.CacheTierDue(static); due.Grown.Hits != 1 {
		t.Errorf("due %+v, want the hit counted after the write", due)
	}
}

func TestTheNotifierKeepsEveryKeyForTheReconcilersQueue(t *testing.T) {
	var n Notifier
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	n.Notify(key("web", "early")) // before the reconciler started
	if err := n.Start(context.Background(), queue); err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // far more than any channel held
		n.Notify(types.NamespacedName{Namespace: "web", Name: "pool-" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	if got := queue.Len(); got != 201 {
		t.Errorf("%d keys queued, want 201", got)
	}
	var nobody *Notifier
	nobody.Notify(key("web", "shop")) // tells no one, and does not panic
}

func TestSinceWhenACacheTierIsUnreferencedIsNotedUntilARouteNamesItOrItIsDeleted(t *testing.T) {
	var s Store
	static := key("web", "static")
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	steps := []struct {
		name  string
		note  func()
		since time.Time
	}{
		{"a tier never noted has no time", func() {}, time.Time{}},
		{"a forgotten note on a tier never noted is no note", func() { s.NoteCacheTierUnreferenced(static, time.Time{}) }, time.Time{}},
		{"a tier noted unreferenced has the noted time", func() { s.NoteCacheTierUnreferenced(static, at) }, at},
		{"a route naming it again forgets the note", func() { s.NoteCacheTierUnreferenced(static, time.Time{}) }, time.Time{}},
		{"a tier noted again has the new time", func() { s.NoteCacheTierUnreferenced(static, at.Add(time.Minute)) }, at.Add(time.Minute)},
		{"a deleted policy's note is forgotten", func() { s.ForgetCacheTier(static) }, time.Time{}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.note()
			if got := s.CacheTierUnreferencedSince(static); !got.Equal(step.since) {
				t.Errorf("unreferenced since %v, want %v", got, step.since)
			}
		})
	}
	s.NoteCacheTierUnreferenced(static, at)
	if _, ok := s.CacheTierDue(static); ok {
		t.Error("a note made the tier's counters due")
	}
}

func TestAFarmsFrontendReportIsKeptApartFromAPoolOfItsNameUntilTheFarmGoes(t *testing.T) {
	var s Store
	key := types.NamespacedName{Namespace: "shop", Name: "web"}
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	https := 25.0
	report := autoscale.Decision{Replicas: 2, Recommended: 3, Measured: &autoscale.Measurement{RequestsPerSecond: 100}}
	if !s.SetFrontendScale(key, report, &https, at) {
		t.Error("a first report does not notify")
	}
	if s.SetFrontendScale(key, report, &https, at.Add(statusRefresh/2)) {
		t.Error("the same report within the status refresh notifies")
	}
	if !s.SetFrontendScale(key, autoscale.Decision{Replicas: 2, MetricsUnavailable: true}, nil, at.Add(statusRefresh/2)) {
		t.Error("figures that become unavailable do not notify")
	}
	if _, ok := s.Scale(key); ok {
		t.Error("a farm's frontend report shows as the pool of its name's decision")
	}
	s.SetFrontendScale(key, report, &https, at)
	if d, ok := s.FrontendScale(key); !ok || d.HTTPSRequestsPerSecond == nil || *d.HTTPSRequestsPerSecond != 25 {
		t.Errorf("report %+v (stored %v), want the one with 25 requests/s over TLS", d, ok)
	}
	s.ForgetFarm(key)
	if _, ok := s.FrontendScale(key); ok {
		t.Error("a deleted farm's report stays")
	}
}
