package controllers_test

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

func appPool(ns, name string) *v1.AppPool {
	return &v1.AppPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.AppPoolSpec{
			Content:  &v1.Content{ConfigMap: v1.ConfigMapContent{Name: v1.ObjectName(name + "-files")}},
			Replicas: ptr.To[int32](2),
		},
	}
}

func cachePolicy(ns, name string) *v1.CachePolicy {
	return &v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// webFarm routes shop.example.com to pool "shop" (static files through cache
// policy "static") and blog.example.com to pool "blog".
func webFarm(ns, name string) *v1.WebFarm {
	return &v1.WebFarm{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.WebFarmSpec{
			Sites: []v1.Site{
				{Name: "shop", Hosts: []v1.Hostname{"shop.example.com", "www.shop.example.com"}, Routes: []v1.Route{
					{PathPrefix: "/", AppPool: "shop"},
					{PathPrefix: "/static", AppPool: "shop", CachePolicy: "static"},
				}},
				{Name: "blog", Hosts: []v1.Hostname{"blog.example.com"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "blog"}}},
			},
		},
	}
}

// create creates the objects, and first the content ConfigMap each AppPool
// names (a pool waits for its content).
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if p, ok := o.(*v1.AppPool); ok && p.Spec.Content != nil && p.Spec.Content.ConfigMap.Name != "" {
			content := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: string(p.Spec.Content.ConfigMap.Name)},
				Data: map[string]string{"index.html": "ok\n"}}
			if err := k8sClient.Create(context.Background(), content); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating the content of AppPool %s: %v", p.Name, err)
			}
		}
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func get(obj client.Object, ns, name string) error {
	return k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

// readyCondition returns an error unless obj's Ready condition has the status
// and reason given, for the object's current generation.
func readyCondition(obj client.Object, conds func() []metav1.Condition, status metav1.ConditionStatus, reason string) error {
	if err := get(obj, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	c := meta.FindStatusCondition(conds(), v1.ConditionReady)
	if c == nil {
		return fmt.Errorf("%s has no Ready condition yet", obj.GetName())
	}
	if c.Status != status || c.Reason != reason || c.ObservedGeneration != obj.GetGeneration() {
		return fmt.Errorf("%s Ready=%s/%s (generation %d of %d): %s", obj.GetName(), c.Status, c.Reason, c.ObservedGeneration, obj.GetGeneration(), c.Message)
	}
	return nil
}

// markDeploymentReady writes the status the Deployment controller would write
// once every replica is ready (the test control plane runs no controllers).
func markDeploymentReady(t *testing.T, ns, name string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := get(d, ns, name); err != nil {
		t.Fatal(err)
	}
	r := ptr.Deref(d.Spec.Replicas, 1)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r}
	if err := k8sClient.Status().Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// update re-reads obj, applies change and writes it, retrying on conflicts
// with the operator's own writes.
func update(t *testing.T, obj client.Object, change func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := get(obj, obj.GetNamespace(), obj.GetName()); err != nil {
			return err
		}
		change()
		return k8sClient.Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}
