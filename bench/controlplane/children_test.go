package main

import (
	"reflect"
	"strings"
	"testing"

	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/render/nginx"
)

func TestChildCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    workload
		want int
	}{
		{"the full-size workload makes 5 objects per pool, 5 per frontend and 4 per cache tier", workload{farms: 40, poolsPerFarm: 50, hostsPerSite: 10}, 2000*5 + 40*5 + 40*4},
		{"one farm with one pool makes a pool's, a frontend's and a cache tier's objects", workload{farms: 1, poolsPerFarm: 1, hostsPerSite: 1}, 5 + 5 + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.childCount(); got != tc.want {
				t.Errorf("childCount() = %d, want %d", got, tc.want)
			}
		})
	}
}

// The baseline applies every object the renderers return, each once.
func TestBaselineAppliesEveryRenderedChild(t *testing.T) {
	const ns = "webfarm-bench"
	w := workload{farms: 1, poolsPerFarm: 1, hostsPerSite: 1}

	pool, err := model.ResolvePool(w.pools(ns)[0], platform)
	if err != nil {
		t.Fatal(err)
	}
	poolConf, err := nginx.PoolConfig(pool)
	if err != nil {
		t.Fatal(err)
	}
	farm, err := model.ResolveFarm(w.webFarms(ns)[0], platform)
	if err != nil {
		t.Fatal(err)
	}
	bootstrap, err := envoy.Bootstrap(farm)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := model.ResolveCache(w.policies(ns)[0], []model.Upstream{{Pool: cachedPool(0), Address: "10.0.0.10", Port: 80}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	cacheConf, err := nginx.CacheConfig(cache)
	if err != nil {
		t.Fatal(err)
	}
	agentConf, err := nginx.CacheAgentConfig(cache)
	if err != nil {
		t.Fatal(err)
	}

	poolObjs := k8s.Pool(pool, poolConf)
	frontendObjs := k8s.Frontend(farm, bootstrap)
	cacheObjs := k8s.Cache(cache, cacheConf, agentConf)
	for _, tc := range []struct {
		name     string
		rendered any // a renderer's struct, one field per object
		applied  []apply.Configuration
	}{
		{"a pool's children are all applied", poolObjs, poolChildren(poolObjs)},
		{"a frontend's children are all applied", frontendObjs, frontendChildren(frontendObjs)},
		{"a cache tier's children are all applied", cacheObjs, cacheChildren(cacheObjs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := reflect.ValueOf(tc.rendered)
			if len(tc.applied) != v.NumField() {
				t.Errorf("the baseline applies %d objects, the renderer returns %d", len(tc.applied), v.NumField())
			}
			for i := range v.NumField() {
				field := v.Type().Field(i).Name
				if v.Field(i).IsNil() {
					t.Errorf("the renderer returned no %s", field)
					continue
				}
				n := 0
				for _, a := range tc.applied {
					if any(a) == v.Field(i).Interface() {
						n++
					}
				}
				if n != 1 {
					t.Errorf("the baseline applies the %s %d times, want once", field, n)
				}
			}
		})
	}
}

func TestCompareChildCounts(t *testing.T) {
	full := map[string]int{"Deployment": 80, "ConfigMap": 80, "Service": 80, "ServiceAccount": 80, "PodDisruptionBudget": 80}
	noPoolAccounts := map[string]int{"Deployment": 80, "ConfigMap": 80, "Service": 80, "ServiceAccount": 2, "PodDisruptionBudget": 80}
	// As many objects as full, of other kinds.
	otherKinds := map[string]int{"Deployment": 80, "ConfigMap": 158, "Service": 80, "ServiceAccount": 2, "PodDisruptionBudget": 80}
	const expected = 400

	for _, tc := range []struct {
		name               string
		operator, baseline map[string]int
		wantErr            string
	}{
		{"runs that both make the rendered objects agree", full, full, ""},
		{"a baseline measured alone that makes them agrees", nil, full, ""},
		{"an operator run without a baseline that makes them agrees", full, nil, ""},
		{"a baseline without the pools' ServiceAccounts fails", full, noPoolAccounts, "the baseline made 322 child objects"},
		{"an operator that makes fewer objects than rendered fails", noPoolAccounts, nil, "the operator made 322 child objects"},
		{"runs with as many objects of other kinds fail", full, otherKinds, "are not the baseline's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := compareChildCounts(expected, tc.operator, tc.baseline)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("compareChildCounts: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("compareChildCounts = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
