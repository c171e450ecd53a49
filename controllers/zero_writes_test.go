package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/controllers"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/testutil"
)

// writeCounter counts every write a client sends to the API server.
type writeCounter struct{ n atomic.Int32 }

func (w *writeCounter) client(t *testing.T) client.Client {
	t.Helper()
	count := func() { w.n.Add(1) }
	return interceptor.NewClient(noWatch{operatorClient}, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, o, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	})
}

// noWatch lets the operator's cached client (field indexes and all) be wrapped
// by the interceptor, which asks for a Watch method the reconcilers never use.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("not used by reconcilers")
}

// discard is an event recorder that drops events (they are not under test here).
type discard struct{}

func (discard) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...interface{}) {
}

var _ events.EventRecorder = discard{}

func TestASecondReconcileOfUnchangedInputPerformsZeroWrites(t *testing.T) {
	t.Run("a farm with defaults", func(t *testing.T) {
		ns := newNamespace(t)
		create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), webFarm(ns, "web"))
		checkZeroWrites(t, ns)
	})
	t.Run("a farm placed on edge nodes behind a cloud load balancer", func(t *testing.T) {
		ns := newNamespace(t)
		shop, static, farm := appPool(ns, "shop"), cachePolicy(ns, "static"), webFarm(ns, "web")
		shop.Spec.Placement = edgePlacement()
		shop.Spec.Placement.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: "DoNotSchedule", MinDomains: 2, NodeTaintsPolicy: "Honor", MatchLabelKeys: []v1.LabelKey{"pod-template-hash"}}}
		static.Spec.Placement = v1.Placement{Tolerations: []v1.Toleration{{Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptr.To[int64](30)}}}
		farm.Spec.Frontend.Placement = edgePlacement()
		farm.Spec.Frontend.Service = v1.FrontendService{Type: "LoadBalancer", LoadBalancerClass: "service.k8s.aws/nlb",
			Annotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"}, LoadBalancerSourceRanges: []v1.CIDR{"10.1.2.3/8"}}
		create(t, shop, appPool(ns, "blog"), static, farm)
		checkZeroWrites(t, ns)
	})
}

// checkZeroWrites reconciles the objects of ns (pools shop and blog, cache
// policy static, farm web) until a pass makes no writes, and then requires
// the next pass to make none.
func checkZeroWrites(t *testing.T, ns string) {
	t.Helper()
	// Let the running operator converge first, so its writes do not race ours.
	testutil.Eventually(t, timeout, func() error { return get(&appsv1.Deployment{}, ns, "static-cache") })

	// Reconcilers of our own over the operator's client (reads from its cache),
	// counting every write.
	var writes writeCounter
	c := writes.client(t)
	applier := &apply.Applier{Client: c}
	reconcilers := []struct {
		name string
		r    interface {
			Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
		}
		objects []string
	}{
		{"WebFarm", &controllers.WebFarmReconciler{Client: c, Applier: applier, Platform: platform, Recorder: discard{}}, []string{"web"}},
		{"AppPool", &controllers.AppPoolReconciler{Client: c, Applier: applier, Platform: platform, Recorder: discard{}}, []string{"shop", "blog"}},
		{"CachePolicy", &controllers.CachePolicyReconciler{Client: c, APIReader: c, Applier: applier, Platform: platform, Recorder: discard{}}, []string{"static"}},
	}
	reconcileAll := func() error {
		for _, rec := range reconcilers {
			for _, name := range rec.objects {
				if _, err := rec.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}); err != nil {
					return fmt.Errorf("%s %s: %w", rec.name, name, err)
				}
			}
		}
		return nil
	}
	// The farm and the running operator may still settle status; reconcile
	// until a pass makes no writes, then require the next pass to make none.
	testutil.Eventually(t, timeout, func() error {
		writes.n.Store(0)
		if err := reconcileAll(); err != nil {
			return err
		}
		if n := writes.n.Load(); n != 0 {
			return fmt.Errorf("a pass still made %d writes", n)
		}
		return nil
	})
	writes.n.Store(0)
	if err := reconcileAll(); err != nil {
		t.Fatal(err)
	}
	if n := writes.n.Load(); n != 0 {
		t.Errorf("reconciling unchanged objects made %d writes, want 0", n)
	}
}
