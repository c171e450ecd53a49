package controllers

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/apply"
	"webfarm.dev/operator/internal/model"
)

// workload is what a pool, a frontend and a cache tier have in common: the
// fields of k8s.PoolObjects and k8s.FrontendObjects, in their order, so
// either converts to it.
type workload struct {
	ServiceAccount      *corev1ac.ServiceAccountApplyConfiguration // nil: none (cache tiers)
	ConfigMap           *corev1ac.ConfigMapApplyConfiguration
	Service             *corev1ac.ServiceApplyConfiguration
	Deployment          *appsv1ac.DeploymentApplyConfiguration
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// applyWorkload applies the children the Deployment's pods need first, then
// the Deployment, and returns what to judge its readiness by.
func applyWorkload(ctx context.Context, a *apply.Applier, w workload) (*appsv1.Deployment, error) {
	if w.ServiceAccount != nil {
		if _, err := apply.Apply(ctx, a, &corev1.ServiceAccount{}, w.ServiceAccount, corev1ac.ExtractServiceAccount); err != nil {
			return nil, err
		}
	}
	if _, err := apply.Apply(ctx, a, &corev1.ConfigMap{}, w.ConfigMap, corev1ac.ExtractConfigMap); err != nil {
		return nil, err
	}
	if _, err := apply.Apply(ctx, a, &corev1.Service{}, w.Service, corev1ac.ExtractService); err != nil {
		return nil, err
	}
	if _, err := apply.Apply(ctx, a, &policyv1.PodDisruptionBudget{}, w.PodDisruptionBudget, policyv1ac.ExtractPodDisruptionBudget); err != nil {
		return nil, err
	}
	return applyDeployment(ctx, a, w.Deployment)
}

// applyDeployment applies a Deployment and returns what to judge its readiness
// by: the live object, or right after a write, the live status against the new
// spec (a generation the Deployment controller has not yet acted on).
func applyDeployment(ctx context.Context, a *apply.Applier, desired *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	live := &appsv1.Deployment{}
	wrote, err := apply.Apply(ctx, a, live, desired, appsv1ac.ExtractDeployment)
	if err != nil || !wrote {
		return live, err
	}
	next := live.DeepCopy()
	next.Generation++
	if desired.Spec != nil && desired.Spec.Replicas != nil {
		next.Spec.Replicas = desired.Spec.Replicas
	}
	return next, nil
}

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// applyNetworkPolicy applies a pool's or cache tier's NetworkPolicy; with
// isolation off (desired nil) it deletes the one the operator made before,
// read from the cache, so that a steady state writes nothing.
func applyNetworkPolicy(ctx context.Context, a *apply.Applier, c client.Reader, key client.ObjectKey, desired *networkingv1ac.NetworkPolicyApplyConfiguration) error {
	if desired != nil {
		_, err := apply.Apply(ctx, a, &networkingv1.NetworkPolicy{}, desired, networkingv1ac.ExtractNetworkPolicy)
		return err
	}
	live := &networkingv1.NetworkPolicy{}
	switch err := c.Get(ctx, key, live); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	_, err := a.Delete(ctx, live)
	return err
}

// peersOf lists the farms of a namespace by a field index (IndexFarmPools
// or indexFarmPolicies) and says who of them reach the pool or tier.
func peersOf(ctx context.Context, c client.Reader, namespace, index, name string, peers func(string, []v1.WebFarm) model.Peers) (model.Peers, error) {
	var farms v1.WebFarmList
	if err := c.List(ctx, &farms, client.InNamespace(namespace), client.MatchingFields{index: name}); err != nil {
		return model.Peers{}, err
	}
	return peers(name, farms.Items), nil
}
