package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/k8s"
)

// The users' ConfigMaps and claims are not in the operator's cache (it holds
// only what it generates), so a missing one is not seen appearing: a pool
// that waits for one looks again this often.
const missingReferenceRecheck = 5 * time.Second

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get

// missingContent says which object a pool's content names and the
// namespace lacks ("" when it exists, or the content is an image). It reads
// the API server only for a pool that has no workers yet or waits for its
// content already: a pool that runs keeps running on what it mounted.
func missingContent(ctx context.Context, cached, live client.Reader, pool *v1.AppPool, m model.Pool) (string, error) {
	var obj client.Object
	switch m.Content.Source {
	case model.ContentConfigMap:
		obj = &corev1.ConfigMap{}
	case model.ContentClaim:
		obj = &corev1.PersistentVolumeClaim{}
	default:
		return "", nil
	}
	if !waitsForContent(pool) {
		err := cached.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: k8s.PoolName(m.Name)}, &appsv1.Deployment{})
		if err == nil || !apierrors.IsNotFound(err) {
			return "", client.IgnoreNotFound(err)
		}
	}
	err := live.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Content.Name}, obj)
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("content %s %q does not exist in namespace %s; the pool starts once it does", m.Content.Source, m.Content.Name, m.Namespace), nil
	}
	return "", err
}

// waitsForContent: the pool's last verdict was a missing reference.
func waitsForContent(pool *v1.AppPool) bool {
	c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Reason == v1.ReasonInvalidReference
}
