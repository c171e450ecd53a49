// Package sharedmodels checks, for tests, that everything that renders or
// measures a farm or a pool sees one model of it: the AppPool and WebFarm
// reconcilers (what they render from), the routing controller (the farm
// and the pools it routes), the autoscaler, the CPU monitor and the
// certificates collector (what they measure against).
package sharedmodels

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/collect/autoscaler"
	"webfarm.dev/operator/internal/collect/certificates"
	"webfarm.dev/operator/internal/collect/cpumonitor"
	"webfarm.dev/operator/internal/lifecycle"
	"webfarm.dev/operator/internal/model"
)

// consumers are the readers of one store of models, wired as
// operator.Setup wires them.
type consumers struct {
	pools    *controllers.AppPoolReconciler
	farms    *controllers.WebFarmReconciler
	routing  *controllers.RoutingReconciler
	scaler   *autoscaler.Autoscaler
	monitor  *cpumonitor.CPUMonitor
	certs    *certificates.Certificates
	platform model.Platform
}

func newConsumers(api client.Client, platform model.Platform) consumers {
	models := model.NewModels(platform)
	return consumers{
		pools:    &controllers.AppPoolReconciler{Client: api, Models: models},
		farms:    &controllers.WebFarmReconciler{Client: api, Models: models},
		routing:  &controllers.RoutingReconciler{Client: api, Models: models},
		scaler:   &autoscaler.Autoscaler{Client: api, Models: models},
		monitor:  &cpumonitor.CPUMonitor{Client: api, Models: models},
		certs:    &certificates.Certificates{Client: api, Models: models},
		platform: platform,
	}
}

// Check reads the AppPools and WebFarms of namespace from api, as stored
// (with their UIDs and generations), and requires each consumer of one
// store of models resolved with platform to see what ResolvePool and
// ResolveFarm make of each object with that platform: the same model, or
// the same error. platform must be the operator's, not the zero one.
func Check(t testing.TB, api client.Client, platform model.Platform, namespace string) {
	t.Helper()
	if platform == (model.Platform{}) {
		t.Fatal("sharedmodels.Check needs the operator's platform, not the zero one")
	}
	ctx := context.Background()
	var pools v1.AppPoolList
	var farms v1.WebFarmList
	for _, l := range []client.ObjectList{&pools, &farms} {
		if err := api.List(ctx, l, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
	}
	if len(pools.Items)+len(farms.Items) == 0 {
		t.Fatalf("namespace %s holds no AppPool and no WebFarm to compare", namespace)
	}
	for _, o := range objects(pools, farms) {
		if o.GetUID() == "" || o.GetGeneration() == 0 {
			t.Fatalf("%T %s has no UID or no generation: the models keep only stored objects", o, o.GetName())
		}
	}
	c := newConsumers(api, platform)
	for i := range pools.Items {
		c.checkPool(t, &pools.Items[i])
	}
	for i := range farms.Items {
		c.checkFarm(ctx, t, &farms.Items[i])
	}
}

func objects(pools v1.AppPoolList, farms v1.WebFarmList) []client.Object {
	var out []client.Object
	for i := range pools.Items {
		out = append(out, &pools.Items[i])
	}
	for i := range farms.Items {
		out = append(out, &farms.Items[i])
	}
	return out
}

func (c consumers) checkPool(t testing.TB, ap *v1.AppPool) {
	t.Helper()
	want, wantErr := model.ResolvePool(ap, c.platform)
	for _, r := range []struct {
		reader string
		pool   func(*v1.AppPool) (model.Pool, error)
	}{
		{"the AppPool reconciler", c.pools.PoolModel},
		{"the autoscaler", c.scaler.PoolModel},
		{"the CPU monitor", c.monitor.PoolModel},
	} {
		got, err := r.pool(ap)
		c.compare(t, fmt.Sprintf("%s's model of AppPool %s", r.reader, ap.Name), got, want, got.Platform, err, wantErr)
	}
}

func (c consumers) checkFarm(ctx context.Context, t testing.TB, wf *v1.WebFarm) {
	t.Helper()
	want, wantErr := model.ResolveFarm(wf, c.platform)
	for _, r := range []struct {
		reader string
		farm   func(*v1.WebFarm) (model.Farm, error)
	}{
		{"the WebFarm reconciler", c.farms.FarmModel},
		{"the certificates collector", c.certs.FarmModel},
	} {
		got, err := r.farm(wf)
		c.compare(t, fmt.Sprintf("%s's model of WebFarm %s", r.reader, wf.Name), got, want, got.Platform, err, wantErr)
	}

	routed, ok, err := c.routing.FarmToRoute(context.Background(), wf)
	if err != nil {
		t.Fatal(err)
	}
	if ok != (wantErr == nil) {
		t.Errorf("the routing controller routes WebFarm %s: %t; its spec resolves: %t", wf.Name, ok, wantErr == nil)
	}
	if !ok {
		return
	}
	c.compare(t, "the routing controller's model of WebFarm "+wf.Name, routed, want, routed.Platform, nil, nil)
	routedPools, err := c.routing.PoolsOf(ctx, routed)
	if err != nil {
		t.Fatal(err)
	}
	wantPools := map[string]model.Pool{}
	for _, name := range want.Pools {
		var ap v1.AppPool
		switch err := c.routing.Client.Get(ctx, client.ObjectKey{Namespace: wf.Namespace, Name: name}, &ap); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			t.Fatal(err)
		}
		if p, err := model.ResolvePool(&ap, c.platform); err == nil {
			wantPools[name] = p.WithRuntime(lifecycle.Recorded(p, ap.Status))
		}
	}
	if len(routedPools) != len(wantPools) {
		t.Errorf("the routing controller routes %d pools of WebFarm %s, want %d (those that exist and resolve)", len(routedPools), wf.Name, len(wantPools))
	}
	for name, w := range wantPools {
		got := routedPools[name]
		c.compare(t, fmt.Sprintf("the routing controller's model of AppPool %s (WebFarm %s)", name, wf.Name), got, w, got.Platform, nil, nil)
	}
}

// compare requires a reader's model (or error) to be the one resolution's
// and its platform to be the operator's.
func (c consumers) compare(t testing.TB, what string, got, want any, platform model.Platform, err, wantErr error) {
	t.Helper()
	if errText(err) != errText(wantErr) {
		t.Errorf("%s: error %q, want %q", what, errText(err), errText(wantErr))
		return
	}
	switch {
	case wantErr != nil:
	case platform != c.platform:
		t.Errorf("%s has platform %+v, want the operator's %+v", what, platform, c.platform)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%s differs from its one resolution:\n got %+v\nwant %+v", what, got, want)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
