package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

func TestAFarmWithPoolsAndACachePolicyGetsEveryChildOwnedByItsParent(t *testing.T) {
	ns := newNamespace(t)
	farm, shop, blog, static := webFarm(ns, "web"), appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static")
	create(t, shop, blog, static, farm)

	children := []struct {
		name  string
		obj   client.Object
		child string
		owner client.Object
	}{
		{"the farm's Envoy Deployment", &appsv1.Deployment{}, "web-frontend", farm},
		{"the farm's bootstrap ConfigMap", &corev1.ConfigMap{}, "web-frontend", farm},
		{"the farm's Service", &corev1.Service{}, "web-frontend", farm},
		{"the farm's ServiceAccount", &corev1.ServiceAccount{}, "web-frontend", farm},
		{"the farm's disruption budget", &policyv1.PodDisruptionBudget{}, "web-frontend", farm},
		{"the pool's nginx Deployment", &appsv1.Deployment{}, "shop-pool", shop},
		{"the pool's nginx.conf", &corev1.ConfigMap{}, "shop-pool", shop},
		{"the pool's Service", &corev1.Service{}, "shop-pool", shop},
		{"the pool's disruption budget", &policyv1.PodDisruptionBudget{}, "shop-pool", shop},
		{"the other pool's Deployment", &appsv1.Deployment{}, "blog-pool", blog},
		{"the cache tier's Deployment", &appsv1.Deployment{}, "static-cache", static},
		{"the cache tier's nginx.conf", &corev1.ConfigMap{}, "static-cache", static},
		{"the cache tier's Service", &corev1.Service{}, "static-cache", static},
		{"the cache tier's disruption budget", &policyv1.PodDisruptionBudget{}, "static-cache", static},
	}
	for _, c := range children {
		t.Run(c.name+" exists with a controller reference to its parent", func(t *testing.T) {
			testutil.Eventually(t, timeout, func() error {
				if err := get(c.obj, ns, c.child); err != nil {
					return err
				}
				ref := metav1.GetControllerOf(c.obj)
				if ref == nil || ref.UID != c.owner.GetUID() || !ptr.Deref(ref.BlockOwnerDeletion, false) {
					return fmt.Errorf("controller reference %+v, want one to %s", ref, c.owner.GetName())
				}
				return nil
			})
		})
	}

	t.Run("the cache tier proxies to the ClusterIP of the pool's Service", func(t *testing.T) {
		svc := &corev1.Service{}
		if err := get(svc, ns, "shop-pool"); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, timeout, func() error {
			cm := &corev1.ConfigMap{}
			if err := get(cm, ns, "static-cache"); err != nil {
				return err
			}
			// The agent beside nginx carries the misses to the pool.
			if want := `"shop": "` + svc.Spec.ClusterIP + `:80"`; !strings.Contains(cm.Data[vocabulary.AgentConfigFile], want) {
				return fmt.Errorf("the cache agent's config lacks %s:\n%s", want, cm.Data[vocabulary.AgentConfigFile])
			}
			return nil
		})
	})

	t.Run("the farm reports its hosts and pools and waits for its frontend", func(t *testing.T) {
		testutil.Eventually(t, timeout, func() error {
			if err := readyCondition(farm, func() []metav1.Condition { return farm.Status.Conditions }, metav1.ConditionFalse, v1.ReasonProgressing); err != nil {
				return err
			}
			if farm.Status.HostCount != 3 || farm.Status.PoolCount != 2 || farm.Status.FrontendReplicas != "0/2" {
				return fmt.Errorf("status hosts=%d pools=%d frontend=%q, want 3, 2, 0/2", farm.Status.HostCount, farm.Status.PoolCount, farm.Status.FrontendReplicas)
			}
			return nil
		})
	})

	t.Run("the farm is Ready once its frontend and both pools serve", func(t *testing.T) {
		for _, d := range []string{"web-frontend", "shop-pool", "blog-pool"} {
			markDeploymentReady(t, ns, d)
		}
		testutil.Eventually(t, timeout, func() error {
			return readyCondition(farm, func() []metav1.Condition { return farm.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable)
		})
		if err := readyCondition(shop, func() []metav1.Condition { return shop.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable); err != nil {
			t.Fatal(err)
		}
		if shop.Status.Phase != v1.PoolRunning || shop.Status.Ready != "2/2" {
			t.Errorf("pool phase %q ready %q, want Running 2/2", shop.Status.Phase, shop.Status.Ready)
		}
	})
}

func TestARouteToAMissingPoolGivesReadyFalseAndAnEventUntilThePoolExists(t *testing.T) {
	ns := newNamespace(t)
	farm := webFarm(ns, "web")
	create(t, appPool(ns, "shop"), cachePolicy(ns, "static"), farm)

	testutil.Eventually(t, timeout, func() error {
		if err := readyCondition(farm, func() []metav1.Condition { return farm.Status.Conditions }, metav1.ConditionFalse, v1.ReasonInvalidReference); err != nil {
			return err
		}
		msg := farm.Status.Conditions[0].Message
		if !strings.Contains(msg, `AppPool "blog"`) {
			return fmt.Errorf("message %q does not name the missing pool", msg)
		}
		return nil
	})
	testutil.Eventually(t, timeout, func() error {
		var events eventsv1.EventList
		if err := k8sClient.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == "web" && e.Reason == v1.ReasonInvalidReference && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, `"blog"`) {
				return nil
			}
		}
		return fmt.Errorf("no InvalidReference warning event among %d events", len(events.Items))
	})
	// The frontend is still applied: the farm's other sites serve.
	if err := get(&appsv1.Deployment{}, ns, "web-frontend"); err != nil {
		t.Fatalf("the frontend of a farm with a missing pool was not created: %v", err)
	}

	create(t, appPool(ns, "blog"))
	testutil.Eventually(t, timeout, func() error {
		err := readyCondition(farm, func() []metav1.Condition { return farm.Status.Conditions }, metav1.ConditionFalse, v1.ReasonProgressing)
		return err
	})
}

func TestEditingAPoolRollsItsPods(t *testing.T) {
	ns := newNamespace(t)
	pool := appPool(ns, "shop")
	create(t, pool)

	hash := func() (string, error) {
		d := &appsv1.Deployment{}
		if err := get(d, ns, "shop-pool"); err != nil {
			return "", err
		}
		return d.Spec.Template.Annotations[vocabulary.ConfigHashKey], nil
	}
	var before string
	testutil.Eventually(t, timeout, func() (err error) {
		before, err = hash()
		if err == nil && before == "" {
			err = fmt.Errorf("no config hash on the pod template")
		}
		return err
	})

	update(t, pool, func() { pool.Spec.MaxConcurrentRequests = 2000 }) // changes nginx's worker_connections
	testutil.Eventually(t, timeout, func() error {
		cm := &corev1.ConfigMap{}
		if err := get(cm, ns, "shop-pool"); err != nil {
			return err
		}
		if !strings.Contains(cm.Data[k8s.NginxConfigKey], "worker_connections 4256;") {
			return fmt.Errorf("nginx.conf not updated")
		}
		after, err := hash()
		if err != nil {
			return err
		}
		if after == before {
			return fmt.Errorf("config hash unchanged (%s): the pods would not roll", after)
		}
		return nil
	})
}

func TestACachePolicyNoRouteNamesRunsNoCacheTier(t *testing.T) {
	ns := newNamespace(t)
	farm, static := webFarm(ns, "web"), cachePolicy(ns, "static")
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), static, farm)
	testutil.Eventually(t, timeout, func() error { return get(&appsv1.Deployment{}, ns, "static-cache") })

	// Drop the cached route: the cache tier goes away.
	update(t, farm, func() { farm.Spec.Sites[0].Routes = farm.Spec.Sites[0].Routes[:1] })
	testutil.Eventually(t, timeout, func() error {
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}} {
			if err := get(obj, ns, "static-cache"); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T static-cache still there (err=%v)", obj, err)
			}
		}
		return readyCondition(static, func() []metav1.Condition { return static.Status.Conditions }, metav1.ConditionFalse, v1.ReasonNotReferenced)
	})
}

func TestTheOperatorLeavesOtherWritersFieldsAlone(t *testing.T) {
	ns := newNamespace(t)
	create(t, appPool(ns, "shop"))
	d := &appsv1.Deployment{}
	testutil.Eventually(t, timeout, func() error { return get(d, ns, "shop-pool") })

	// A GitOps tool or a person adds a label with its own field manager.
	patch := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"shop-pool","namespace":"` + ns + `","labels":{"team":"storefront"}}}`)
	if err := k8sClient.Patch(context.Background(), d, client.RawPatch("application/apply-patch+yaml", patch), client.FieldOwner("gitops"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	rv := d.ResourceVersion
	// Touch the pool so it reconciles; the Deployment must keep the label and
	// must not be rewritten.
	pool := appPool(ns, "shop")
	update(t, pool, func() { pool.Annotations = map[string]string{"touched": "yes"} })
	testutil.Eventually(t, timeout, func() error {
		if err := get(pool, ns, "shop"); err != nil {
			return err
		}
		if pool.Status.ObservedGeneration != pool.Generation {
			return fmt.Errorf("not reconciled yet")
		}
		return nil
	})
	if err := get(d, ns, "shop-pool"); err != nil {
		t.Fatal(err)
	}
	if d.Labels["team"] != "storefront" {
		t.Errorf("the operator removed another writer's label: %v", d.Labels)
	}
	if d.ResourceVersion != rv {
		t.Errorf("the Deployment was rewritten (resourceVersion %s -> %s) though the pool's spec did not change", rv, d.ResourceVersion)
	}
}

// The API server checks host uniqueness for farms of up to 512 host names; the
// operator checks every farm, and an invalid farm keeps its last good frontend.
func TestAHostInTwoSitesOfALargeFarmGivesInvalidSpecAndChangesNothing(t *testing.T) {
	ns := newNamespace(t)
	farm := webFarm(ns, "web")
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), farm)
	bootstrap := &corev1.ConfigMap{}
	testutil.Eventually(t, timeout, func() error { return get(bootstrap, ns, "web-frontend") })

	update(t, farm, func() {
		for s := range 6 { // 540 more host names: past the API server's check
			site := v1.Site{Name: fmt.Sprintf("extra-%d", s), Routes: []v1.Route{{PathPrefix: "/", AppPool: "blog"}}}
			for h := range 90 {
				site.Hosts = append(site.Hosts, v1.Hostname(fmt.Sprintf("h%d.s%d.example.com", h, s)))
			}
			farm.Spec.Sites = append(farm.Spec.Sites, site)
		}
		last := &farm.Spec.Sites[len(farm.Spec.Sites)-1]
		last.Hosts = append(last.Hosts, "shop.example.com") // also in site "shop"
	})
	testutil.Eventually(t, timeout, func() error {
		if err := readyCondition(farm, func() []metav1.Condition { return farm.Status.Conditions }, metav1.ConditionFalse, v1.ReasonInvalidSpec); err != nil {
			return err
		}
		if msg := farm.Status.Conditions[0].Message; !strings.Contains(msg, `host name "shop.example.com" belongs to sites "shop" and "extra-5"`) {
			return fmt.Errorf("message %q does not name the host and its sites", msg)
		}
		return nil
	})
	after := &corev1.ConfigMap{}
	if err := get(after, ns, "web-frontend"); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != bootstrap.ResourceVersion {
		t.Error("the frontend's configuration changed although the farm's spec is invalid")
	}
}
