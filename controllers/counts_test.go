package controllers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/testutil"
)

// rivalBeforeStatus is the operator's client with a rival: before the first
// status write of each object reaches the API server, the rival writes
// that object's annotations, so the write meets a real conflict.
func rivalBeforeStatus(t *testing.T) client.Client {
	t.Helper()
	var rivalled atomic.Bool
	return interceptor.NewClient(noWatch{operatorClient}, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if sub == "status" && rivalled.CompareAndSwap(false, true) {
				rival := o.DeepCopyObject().(client.Object)
				patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test.webfarm.dev/rival":"1"}}}`))
				if err := k8sClient.Patch(ctx, rival, patch); err != nil {
					return err
				}
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
}

// reconcileUntilWritten reconciles until a reconcile succeeds; the first one
// must meet the rival's conflict.
func reconcileUntilWritten(t *testing.T, r interface {
	Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
}, key types.NamespacedName) {
	t.Helper()
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if !apierrors.IsConflict(err) {
		t.Fatalf("first reconcile: %v, want the rival's conflict", err)
	}
	testutil.Eventually(t, timeout, func() error {
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
		return err
	})
}

func TestCountsTheCollectorsSawReachTheStatusOnceThroughAConflict(t *testing.T) {
	ns := newNamespace(t)
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), webFarm(ns, "web"))
	testutil.Eventually(t, timeout, func() error { return get(&appsv1.Deployment{}, ns, "static-cache") })

	t.Run("a pool's queue refusals", func(t *testing.T) {
		store := &observations.Store{}
		c := rivalBeforeStatus(t)
		r := &controllers.AppPoolReconciler{Client: c, Applier: &apply.Applier{Client: c}, Platform: platform,
			Recorder: discard{}, Observations: store}
		key := types.NamespacedName{Namespace: ns, Name: "shop"}
		store.AddRefusals(key, 9, 2, time.Now())

		reconcileUntilWritten(t, r, key)
		expectQueue := func() {
			t.Helper()
			var pool v1.AppPool
			if err := get(&pool, ns, "shop"); err != nil {
				t.Fatal(err)
			}
			if q := pool.Status.Queue; q.Rejected != 9 || q.TimedOut != 2 || q.LastRejectionTime == nil {
				t.Errorf("status.queue rejected %d, timed out %d, last %v; want 9, 2 and a time", q.Rejected, q.TimedOut, q.LastRejectionTime)
			}
		}
		expectQueue()
		if n, ok := store.Refusals(key); ok {
			t.Errorf("the store still holds %+v after the write", n)
		}
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		expectQueue() // counted once
	})

	t.Run("a cache tier's counters", func(t *testing.T) {
		store := &observations.Store{}
		c := rivalBeforeStatus(t)
		r := &controllers.CachePolicyReconciler{Client: c, APIReader: c, Applier: &apply.Applier{Client: c}, Platform: platform,
			Recorder: discard{}, Observations: store}
		key := types.NamespacedName{Namespace: ns, Name: "static"}
		store.AddCacheGrowth(key, v1.CacheCounters{Hits: 9, Misses: 1})
		store.PublishCacheTier(key, 4, 1<<20)

		reconcileUntilWritten(t, r, key)
		expectCounters := func() {
			t.Helper()
			var policy v1.CachePolicy
			if err := get(&policy, ns, "static"); err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%+v %s", policy.Status.Counters, policy.Status.HitPercent)
			if want := fmt.Sprintf("%+v 90.0%%", &v1.CacheCounters{Hits: 9, Misses: 1}); got != want {
				t.Errorf("status counters %s, want %s", got, want)
			}
		}
		expectCounters()
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		expectCounters() // counted once
	})
}
