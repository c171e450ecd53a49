package frontendstats

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"webfarm.dev/operator/internal/envoystats"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

func TestAFrontendsRefusalsCountFromWhenItTookItsVersion(t *testing.T) {
	took := observations.FrontendConfig{Pod: "p", Version: "v1", Rejected: 3, RejectedBefore: 2}
	for _, tt := range []struct {
		name  string
		prev  observations.FrontendConfig
		known bool
		now   envoystats.Config
		want  observations.FrontendConfig
	}{
		{"a frontend first read may have refused anything since its version", observations.FrontendConfig{}, false,
			envoystats.Config{Version: "v1", Rejected: 2}, observations.FrontendConfig{Pod: "p", Version: "v1", Rejected: 2}},
		{"a frontend that keeps its version keeps its count from then", took, true,
			envoystats.Config{Version: "v1", Rejected: 4}, observations.FrontendConfig{Pod: "p", Version: "v1", Rejected: 4, RejectedBefore: 2}},
		{"a new version counts from the reading before, so a refusal read with it counts as after", took, true,
			envoystats.Config{Version: "v2", Rejected: 4}, observations.FrontendConfig{Pod: "p", Version: "v2", Rejected: 4, RejectedBefore: 3}},
		{"a restarted Envoy counts from zero", took, true,
			envoystats.Config{Version: "v1", Rejected: 1}, observations.FrontendConfig{Pod: "p", Version: "v1", Rejected: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextConfig(tt.prev, tt.known, "p", tt.now); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// configPage is an Envoy page (envoystats.ConfigQuery) of a frontend that
// took version for its listeners and refused rejected cluster updates.
func configPage(version string, rejected int) testutil.Answer {
	return testutil.Answer{Status: http.StatusOK, Body: fmt.Sprintf(
		"# TYPE envoy_listener_manager_lds_version_text gauge\nenvoy_listener_manager_lds_version_text{text_value=%q} 0\n"+
			"# TYPE envoy_listener_manager_lds_update_time gauge\nenvoy_listener_manager_lds_update_time{} 1795889204250\n"+
			"# TYPE envoy_cluster_manager_cds_update_rejected counter\nenvoy_cluster_manager_cds_update_rejected{} %d\n", version, rejected)}
}

func TestEachFrontendsConfigurationIsStoredForItsFarm(t *testing.T) {
	pages := [][]testutil.Answer{
		{configPage("v1", 0), configPage("v2", 0), {Status: http.StatusNotFound}},
		{configPage("v1", 0), configPage("v1", 1), {Status: http.StatusNotFound}},
	}
	handlers := make([]http.Handler, len(pages))
	for i, answers := range pages {
		config := testutil.AnswerAt(vocabulary.FrontendMetricsPath, envoystats.ConfigQuery, answers...)
		poolFigures := testutil.AnswerAt(vocabulary.FrontendMetricsPath, envoystats.Query, ok(counts{}))
		handlers[i] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.RawQuery == envoystats.ConfigQuery {
				config.ServeHTTP(w, r)
				return
			}
			poolFigures.ServeHTTP(w, r)
		})
	}
	port, ips := testutil.ServeOnLoopbackHosts(t, handlers...)
	// Listed in the other order: stored in the pods' names' order.
	pods := []client.Object{frontendPod("web", "contoso-frontend-b", ips[1], true), frontendPod("web", "contoso-frontend-a", ips[0], true)}
	s, _ := newStats(t, port, pods...)
	farmQueue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(farmQueue.ShutDown)
	s.Farms = &observations.Notifier{}
	if err := s.Farms.Start(context.Background(), farmQueue); err != nil {
		t.Fatal(err)
	}
	farm := types.NamespacedName{Namespace: "web", Name: "contoso"}
	for i, want := range [][]observations.FrontendConfig{
		{{Pod: "contoso-frontend-a", Version: "v1"}, {Pod: "contoso-frontend-b", Version: "v1"}},
		{{Pod: "contoso-frontend-a", Version: "v2"}, {Pod: "contoso-frontend-b", Version: "v1", Rejected: 1}},
		nil, // no frontend could be read: nothing to judge
	} {
		s.collect(context.Background())
		got, stored := s.Observations.FrontendConfigs(farm)
		if !slices.Equal(got, want) || stored != (want != nil) {
			t.Errorf("reading %d: stored %v (%v), want %v", i+1, got, stored, want)
		}
		if farmQueue.Len() != 1 {
			t.Errorf("reading %d: %d farms named, want the farm whose frontends changed", i+1, farmQueue.Len())
		}
		if farmQueue.Len() > 0 {
			item, _ := farmQueue.Get()
			farmQueue.Done(item)
			farmQueue.Forget(item)
		}
	}
	s.collect(context.Background())
	if farmQueue.Len() != 0 {
		t.Errorf("a farm was named though nothing changed")
	}
}
