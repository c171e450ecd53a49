package model

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

var operatorPlatform = Platform{Images: Images{Envoy: "envoy:1", Nginx: "nginx:1", CacheAgent: "agent:1", PullPolicy: "IfNotPresent"},
	XDSHost: "xds.webfarm-system.svc", XDSPort: 18000}

// countingModels is a store whose resolutions are counted.
func countingModels() (*Models, *atomic.Int64, *atomic.Int64) {
	var farms, pools atomic.Int64
	m := NewModels(operatorPlatform)
	m.resolveFarm = func(f *v1.WebFarm, p Platform) (Farm, error) { farms.Add(1); return ResolveFarm(f, p) }
	m.resolvePool = func(ap *v1.AppPool, p Platform) (Pool, error) { pools.Add(1); return ResolvePool(ap, p) }
	return m, &farms, &pools
}

func storedPool(uid string, generation int64, configMap string) *v1.AppPool {
	return &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "shop", UID: types.UID(uid), Generation: generation},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: v1.ObjectName(configMap)}}}}
}

func storedFarm(uid string, generation int64, pool string) *v1.WebFarm {
	return &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "farm", UID: types.UID(uid), Generation: generation},
		Spec: v1.WebFarmSpec{Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example.com"}, Routes: []v1.Route{{AppPool: v1.ObjectName(pool)}}}}}}
}

func TestModelsResolveAPoolOncePerChange(t *testing.T) {
	for _, tt := range []struct {
		name  string
		reads []*v1.AppPool
		// want is the content each read sees; resolutions how many reads resolved.
		want        []string
		resolutions int64
	}{
		{"reads of one generation share one resolution",
			[]*v1.AppPool{storedPool("a", 1, "site"), storedPool("a", 1, "site"), storedPool("a", 1, "site")},
			[]string{"site", "site", "site"}, 1},
		{"a new generation is resolved again, and then shared",
			[]*v1.AppPool{storedPool("a", 1, "site"), storedPool("a", 2, "site-v2"), storedPool("a", 2, "site-v2")},
			[]string{"site", "site-v2", "site-v2"}, 2},
		{"an object recreated under the same name is resolved again",
			[]*v1.AppPool{storedPool("a", 3, "site"), storedPool("b", 1, "other"), storedPool("b", 1, "other")},
			[]string{"site", "other", "other"}, 2},
		{"an older copy from a lagging cache is resolved as it is and does not replace the newer",
			[]*v1.AppPool{storedPool("a", 2, "site-v2"), storedPool("a", 1, "site"), storedPool("a", 2, "site-v2")},
			[]string{"site-v2", "site", "site-v2"}, 2},
		{"an object never stored (no UID, no generation) is resolved on every read",
			[]*v1.AppPool{storedPool("", 0, "site"), storedPool("", 0, "site-v2")},
			[]string{"site", "site-v2"}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, _, pools := countingModels()
			for i, ap := range tt.reads {
				p, err := m.Pool(ap)
				if err != nil {
					t.Fatal(err)
				}
				if p.Content.Name != tt.want[i] {
					t.Errorf("read %d sees content %q, want %q", i, p.Content.Name, tt.want[i])
				}
				if p.Platform != operatorPlatform {
					t.Errorf("read %d sees platform %+v, want the store's", i, p.Platform)
				}
			}
			if got := pools.Load(); got != tt.resolutions {
				t.Errorf("%d resolutions, want %d", got, tt.resolutions)
			}
		})
	}
}

func TestModelsResolveAFarmOncePerGeneration(t *testing.T) {
	m, farms, _ := countingModels()
	first, err := m.Farm(storedFarm("f", 1, "shop"))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := m.Farm(storedFarm("f", 1, "shop"))
	if !reflect.DeepEqual(first, again) || farms.Load() != 1 {
		t.Errorf("%d resolutions of one generation, want 1 with the same model", farms.Load())
	}
	changed, _ := m.Farm(storedFarm("f", 2, "blog"))
	if want := []string{"blog"}; !reflect.DeepEqual(changed.Pools, want) || farms.Load() != 2 {
		t.Errorf("after a change: pools %v after %d resolutions, want %v after 2", changed.Pools, farms.Load(), want)
	}
	if want, _ := ResolveFarm(storedFarm("f", 2, "blog"), operatorPlatform); !reflect.DeepEqual(changed, want) {
		t.Errorf("the stored model differs from ResolveFarm's:\n got %+v\nwant %+v", changed, want)
	}
}

func TestModelsKeepASpecsErrorForItsGeneration(t *testing.T) {
	m, farms, pools := countingModels()
	invalid := storedPool("a", 1, "")
	_, first := m.Pool(invalid)
	_, again := m.Pool(invalid)
	if first == nil || again == nil || first.Error() != again.Error() || pools.Load() != 1 {
		t.Errorf("errors %v and %v after %d resolutions, want the same error after 1", first, again, pools.Load())
	}
	if _, err := m.Pool(storedPool("a", 2, "site")); err != nil || pools.Load() != 2 {
		t.Errorf("the fixed spec: %v after %d resolutions, want a model after 2", err, pools.Load())
	}

	badFarm := storedFarm("f", 1, "Not_A_Name")
	_, first = m.Farm(badFarm)
	_, again = m.Farm(badFarm)
	if first == nil || again == nil || first.Error() != again.Error() || farms.Load() != 1 {
		t.Errorf("farm errors %v and %v after %d resolutions, want the same error after 1", first, again, farms.Load())
	}
}

func TestModelsForgetADeletedObject(t *testing.T) {
	m, farms, pools := countingModels()
	read := func() {
		t.Helper()
		if _, err := m.Pool(storedPool("a", 1, "site")); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Farm(storedFarm("f", 1, "shop")); err != nil {
			t.Fatal(err)
		}
	}
	read()
	m.ForgetPool(types.NamespacedName{Namespace: "web", Name: "shop"})
	m.ForgetFarm(types.NamespacedName{Namespace: "web", Name: "farm"})
	if len(m.pools.entries) != 0 || len(m.farms.entries) != 0 {
		t.Errorf("%d pools and %d farms kept after they were forgotten", len(m.pools.entries), len(m.farms.entries))
	}
	read()
	if pools.Load() != 2 || farms.Load() != 2 {
		t.Errorf("%d pool and %d farm resolutions, want each resolved again after it was forgotten", pools.Load(), farms.Load())
	}
}

// Run with -race: readers of many objects at once share one resolution per
// object and generation.
func TestModelsServeConcurrentReaders(t *testing.T) {
	m, farms, pools := countingModels()
	const objects, readers = 8, 16
	var wg sync.WaitGroup
	errs := make(chan error, objects*readers)
	for range readers {
		for i := range objects {
			wg.Go(func() {
				uid := fmt.Sprint("uid-", i)
				ap := storedPool(uid, 1, "site")
				ap.Name = fmt.Sprint("pool-", i)
				f := storedFarm(uid, 1, ap.Name)
				f.Name = fmt.Sprint("farm-", i)
				p, err := m.Pool(ap)
				if err == nil && p.Name != ap.Name {
					err = fmt.Errorf("pool %s read as %s", ap.Name, p.Name)
				}
				if err != nil {
					errs <- err
					return
				}
				if got, err := m.Farm(f); err != nil || !reflect.DeepEqual(got.Pools, []string{ap.Name}) {
					errs <- fmt.Errorf("farm %s: %v, pools %v", f.Name, err, got.Pools)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if pools.Load() != objects || farms.Load() != objects {
		t.Errorf("%d pool and %d farm resolutions, want %d of each", pools.Load(), farms.Load(), objects)
	}
}
