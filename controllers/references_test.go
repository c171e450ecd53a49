package controllers_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
)

// A pool whose content or app volume is not there, or whose content
// ConfigMap lacks the file its health check asks for, gets no workers: it
// says why and starts once the object appears or is mended.
func TestAPoolWhoseContentOrVolumeDoesNotExistSaysWhichAndStartsOnceItDoes(t *testing.T) {
	app := func(volumes ...v1.AppVolume) v1.AppContainer {
		return v1.AppContainer{Image: "registry.example.com/docs:1", Port: 3000, Volumes: volumes}
	}
	claim := func(ns, name string) client.Object {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
	}
	for _, tt := range []struct {
		name    string
		content v1.Content
		app     v1.AppContainer
		message string // "<ns>" stands for the test's namespace
		present func(ns string) client.Object
		appear  func(ns string) client.Object // created, or updated when present
	}{
		{
			name:    "a content ConfigMap that does not exist",
			content: v1.Content{ConfigMap: v1.ConfigMapContent{Name: "docs-files"}},
			message: `content ConfigMap "docs-files" does not exist in namespace <ns>`,
			appear: func(ns string) client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs-files"}, Data: map[string]string{"index.html": "docs\n"}}
			},
		},
		{
			name:    "a content ConfigMap without the index its health check asks for",
			content: v1.Content{ConfigMap: v1.ConfigMapContent{Name: "docs-files"}},
			message: `content ConfigMap "docs-files" has no index.html or index.htm, which the health check's GET / asks for, so its workers would never pass it: add the file, or set healthCheck.path to one of its files (such as /guide.html)`,
			present: func(ns string) client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs-files"}, Data: map[string]string{"guide.html": "docs\n"}}
			},
			appear: func(ns string) client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs-files"}, Data: map[string]string{"guide.html": "docs\n", "index.html": "home\n"}}
			},
		},
		{
			name:    "a content claim that does not exist",
			content: v1.Content{PersistentVolumeClaim: v1.PersistentVolumeClaimContent{ClaimName: "docs-volume"}},
			message: `content PersistentVolumeClaim "docs-volume" does not exist in namespace <ns>`,
			appear:  func(ns string) client.Object { return claim(ns, "docs-volume") },
		},
		{
			name: "a ConfigMap an app volume mounts that does not exist",
			app: app(v1.AppVolume{Name: "settings", MountPath: "/etc/docs", ConfigMap: v1.ConfigMapVolume{Name: "docs-settings"}},
				v1.AppVolume{Name: "maybe", MountPath: "/etc/maybe", ConfigMap: v1.ConfigMapVolume{Name: "docs-maybe", Optional: ptr.To(true)}},
				v1.AppVolume{Name: "db", MountPath: "/etc/db", Secret: v1.SecretVolume{Name: "docs-db"}}),
			message: `app volume settings: ConfigMap "docs-settings" does not exist in namespace <ns>`,
			appear: func(ns string) client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs-settings"}, Data: map[string]string{"mode": "test"}}
			},
		},
		{
			name:    "a claim an app volume mounts that does not exist",
			app:     app(v1.AppVolume{Name: "uploads", MountPath: "/srv/uploads", ReadOnly: ptr.To(false), PersistentVolumeClaim: v1.PersistentVolumeClaimContent{ClaimName: "docs-uploads"}}),
			message: `app volume uploads: PersistentVolumeClaim "docs-uploads" does not exist in namespace <ns>`,
			appear:  func(ns string) client.Object { return claim(ns, "docs-uploads") },
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t)
			message := strings.ReplaceAll(tt.message, "<ns>", ns)
			if tt.present != nil {
				if err := k8sClient.Create(ctx, tt.present(ns)); err != nil {
					t.Fatal(err)
				}
			}
			pool := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Spec: v1.AppPoolSpec{App: tt.app, Replicas: ptr.To[int32](1)}}
			if !reflect.DeepEqual(tt.content, v1.Content{}) {
				content := tt.content
				pool.Spec.Content = &content
			}
			if err := k8sClient.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, timeout, func() error {
				if err := readyCondition(pool, func() []metav1.Condition { return pool.Status.Conditions }, metav1.ConditionFalse, v1.ReasonInvalidReference); err != nil {
					return err
				}
				if msg := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionReady).Message; !strings.Contains(msg, message) {
					return fmt.Errorf("message %q, want one that contains %q", msg, message)
				}
				if pool.Status.Phase != v1.PoolPending {
					return fmt.Errorf("phase %q, want Pending", pool.Status.Phase)
				}
				return nil
			})
			if err := get(&appsv1.Deployment{}, ns, "docs-pool"); !apierrors.IsNotFound(err) {
				t.Errorf("the pool's workers were made for content that is not there (Deployment: %v)", err)
			}
			testutil.Eventually(t, timeout, func() error {
				var events eventsv1.EventList
				if err := k8sClient.List(ctx, &events, client.InNamespace(ns)); err != nil {
					return err
				}
				for _, e := range events.Items {
					if e.Regarding.Name == "docs" && e.Reason == v1.ReasonInvalidReference && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, message) {
						return nil
					}
				}
				return fmt.Errorf("no InvalidReference warning event among %d events", len(events.Items))
			})

			appeared := time.Now()
			fix := tt.appear(ns)
			var err error
			if tt.present != nil {
				stored := tt.present(ns)
				if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(stored), stored); err != nil {
					t.Fatal(err)
				}
				fix.SetResourceVersion(stored.GetResourceVersion())
				err = k8sClient.Update(ctx, fix)
			} else {
				err = k8sClient.Create(ctx, fix)
			}
			if err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, timeout, func() error {
				if err := get(&appsv1.Deployment{}, ns, "docs-pool"); err != nil {
					return err
				}
				return readyCondition(pool, func() []metav1.Condition { return pool.Status.Conditions }, metav1.ConditionFalse, v1.ReasonProgressing)
			})
			took := time.Since(appeared)
			t.Logf("the pool made its workers %s after its content appeared", took.Round(10*time.Millisecond))
			if took > 10*time.Second {
				t.Errorf("the pool took %s to start once its content appeared, want at most 10 s (it looks again every 5 s)", took)
			}
		})
	}
}

// The operator reads no Secret: a pool whose app mounts one gets its
// workers at once, and they mount it by name, read-only, as they do an
// optional ConfigMap that does not exist (the kubelet decides about both).
func TestAPoolsWorkersMountTheSecretsConfigMapsAndClaimsItNamesReadOnly(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := k8sClient.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-settings"}}); err != nil {
		t.Fatal(err)
	}
	pool := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}, Spec: v1.AppPoolSpec{Replicas: ptr.To[int32](1),
		App: v1.AppContainer{Image: "registry.example.com/shop:1", Port: 3000, Volumes: []v1.AppVolume{
			{Name: "db", MountPath: "/etc/shop/db", Secret: v1.SecretVolume{Name: "shop-db"}},
			{Name: "settings", MountPath: "/etc/shop/settings", ConfigMap: v1.ConfigMapVolume{Name: "shop-settings"}},
			{Name: "extra", MountPath: "/etc/shop/extra", ConfigMap: v1.ConfigMapVolume{Name: "not-there", Optional: ptr.To(true)}},
		}}}}
	if err := k8sClient.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	testutil.Eventually(t, timeout, func() error { return get(&d, ns, "shop-pool") })

	want := map[string]string{
		"app-db":       "secret shop-db optional false at /etc/shop/db",
		"app-settings": "configMap shop-settings optional false at /etc/shop/settings",
		"app-extra":    "configMap not-there optional true at /etc/shop/extra",
	}
	got := map[string]string{}
	spec := d.Spec.Template.Spec
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if _, ok := want[m.Name]; !ok {
				continue
			}
			if c.Name != "app" || !m.ReadOnly {
				t.Errorf("container %s mounts %s read-only %v; want only the app, read-only", c.Name, m.Name, m.ReadOnly)
			}
			for _, v := range spec.Volumes {
				switch {
				case v.Name != m.Name:
				case v.Secret != nil:
					got[m.Name] = fmt.Sprintf("secret %s optional %v at %s", v.Secret.SecretName, *v.Secret.Optional, m.MountPath)
				case v.ConfigMap != nil:
					got[m.Name] = fmt.Sprintf("configMap %s optional %v at %s", v.ConfigMap.Name, *v.ConfigMap.Optional, m.MountPath)
				}
			}
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("volume %s: %q, want %q", name, got[name], w)
		}
	}
}
