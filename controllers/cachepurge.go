package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/cachetier"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/vocabulary"
)

// purge makes the decision's purges through the tier's agents, in order,
// and records them: an event each, status.lastPurge for the annotation's,
// and status.poolContent once all are made (after a failed purge the
// record stays as it was, so the next decision purges again).
func (r *CachePolicyReconciler) purge(ctx context.Context, policy *v1.CachePolicy, d cachetier.Decision) error {
	for _, p := range d.Purges {
		n, err := r.purgeTier(ctx, policy, p.Pool)
		if err != nil {
			return err
		}
		if last := p.LastPurge(n); last != nil {
			policy.Status.LastPurge = last
		}
		e := p.Event(n)
		r.Recorder.Eventf(policy, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
	policy.Status.PoolContent = d.PoolContent
	return nil
}

// poolBehind reads a pool's content revision (its worker pod template, and
// the resourceVersion of its content ConfigMap) and whether its rollout is
// complete; a pool without a Deployment has no revision yet.
func (r *CachePolicyReconciler) poolBehind(ctx context.Context, namespace, pool string) (cachetier.Pool, error) {
	p := cachetier.Pool{Name: pool}
	var dep appsv1.Deployment
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: vocabulary.PoolName(pool)}, &dep); err != nil {
		return p, client.IgnoreNotFound(err)
	}
	template, err := json.Marshal(dep.Spec.Template)
	if err != nil {
		return p, err
	}
	sum := sha256.Sum256(template)
	rev := cachetier.Revision{Template: hex.EncodeToString(sum[:8])}
	var ap v1.AppPool
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pool}, &ap); client.IgnoreNotFound(err) != nil {
		return p, err
	}
	if c := ap.Spec.Content; c != nil && c.ConfigMap.Name != "" {
		// The user's ConfigMaps are not in the operator's cache (it holds only
		// its own children): read it from the API server.
		var cm corev1.ConfigMap
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: string(c.ConfigMap.Name)}, &cm)
		switch {
		case apierrors.IsNotFound(err):
			rev.ConfigMap = "missing"
		case err != nil:
			return p, err
		default:
			rev.ConfigMap = cm.ResourceVersion
		}
	}
	p.Revision, p.RolledOut = &rev, deploymentRolledOut(&dep)
	return p, nil
}

// deploymentRolledOut: every pod runs the current template (no old ones left).
func deploymentRolledOut(d *appsv1.Deployment) bool {
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == desired && s.Replicas == desired && s.AvailableReplicas == desired
}

// nothingToPurge tells whether a purge that failed with err needs no retry:
// a pod that is not Ready gets no traffic, and while its agent does not
// listen nginx admits nothing to its cache (misses go through the agent), so
// such a pod (a starting one, as while a tier rolls) holds nothing to purge.
func nothingToPurge(pod *corev1.Pod, err error) bool {
	return !health.PodReady(pod) && errors.Is(err, syscall.ECONNREFUSED)
}

// purgeTier asks the agent of every running pod of the tier to purge a
// pool's entries ("" for all) and returns how many they removed. A pod that
// starts later has an empty cache.
func (r *CachePolicyReconciler) purgeTier(ctx context.Context, policy *v1.CachePolicy, pool string) (int64, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(policy.Namespace), client.MatchingLabels{
		vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentCache, vocabulary.LabelInstance: policy.Name,
	}); err != nil {
		return 0, err
	}
	token, err := cacheadmin.AgentToken(ctx, r.Client, policy.Namespace, policy.Name)
	if err != nil {
		return 0, err
	}
	agents := r.Agents
	if agents.Port == 0 {
		agents.Port = vocabulary.AgentAdminPort
	}
	var total int64
	var errs []error
	for _, pod := range pods.Items {
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		n, err := agents.Purge(ctx, pod.Status.PodIP, token, pool)
		if err != nil && nothingToPurge(&pod, err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("purging cache pod %s: %w", pod.Name, err))
			continue
		}
		total += n
	}
	return total, errors.Join(errs...)
}
