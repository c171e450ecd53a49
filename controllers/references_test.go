package controllers_test

import (
	"context"
	"fmt"
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

func TestAPoolWhoseContentDoesNotExistSaysWhichAndStartsOnceItDoes(t *testing.T) {
	for _, tt := range []struct {
		name    string
		content v1.Content
		message string
		appear  func(ns string) client.Object
	}{
		{
			name:    "a content ConfigMap that does not exist",
			content: v1.Content{ConfigMap: v1.ConfigMapContent{Name: "docs-files"}},
			message: `content ConfigMap "docs-files" does not exist in namespace`,
			appear: func(ns string) client.Object {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs-files"}, Data: map[string]string{"index.html": "docs\n"}}
			},
		},
		{
			name:    "a content claim that does not exist",
			content: v1.Content{PersistentVolumeClaim: v1.PersistentVolumeClaimContent{ClaimName: "docs-volume"}},
			message: `content PersistentVolumeClaim "docs-volume" does not exist in namespace`,
			appear: func(ns string) client.Object {
				return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs-volume"}, Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				}}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNamespace(t)
			content := tt.content
			pool := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Spec: v1.AppPoolSpec{Content: &content, Replicas: ptr.To[int32](1)}}
			if err := k8sClient.Create(ctx, pool); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, timeout, func() error {
				if err := readyCondition(pool, func() []metav1.Condition { return pool.Status.Conditions }, metav1.ConditionFalse, v1.ReasonInvalidReference); err != nil {
					return err
				}
				if msg := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionReady).Message; !strings.Contains(msg, tt.message+" "+ns) {
					return fmt.Errorf("message %q, want one that contains %q", msg, tt.message+" "+ns)
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
					if e.Regarding.Name == "docs" && e.Reason == v1.ReasonInvalidReference && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, tt.message) {
						return nil
					}
				}
				return fmt.Errorf("no InvalidReference warning event among %d events", len(events.Items))
			})

			appeared := time.Now()
			if err := k8sClient.Create(ctx, tt.appear(ns)); err != nil {
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
