package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cacheadmin"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/vocabulary"
)

// Content changes reach a cache tier's entries this way: the operator notes
// each pool's content revision (its worker pod template, and the
// resourceVersion of its content ConfigMap), and when the revision changes
// it purges that pool's entries once the pool serves the new content:
//   - a new pod template (image, content image, config): when the pool's
//     rollout is complete;
//   - new ConfigMap data: kubelet updates the files in running workers within
//     its sync period, so configMapSettle after the change is seen, which
//     the reconciler looks for every contentPoll.
const (
	configMapSettle = 90 * time.Second
	contentPoll     = 30 * time.Second
)

// poolRevision is a pool's content revision in two parts: its worker pod
// template and its content ConfigMap's resourceVersion ("" without one).
type poolRevision struct{ template, configMap string }

func (p poolRevision) String() string { return "template:" + p.template + ",configmap:" + p.configMap }

func parseRevision(s string) poolRevision {
	template, configMap, _ := strings.Cut(s, ",configmap:")
	return poolRevision{template: strings.TrimPrefix(template, "template:"), configMap: configMap}
}

// contentStep is what to do about one pool's entries.
type contentStep int

const (
	contentCurrent contentStep = iota // entries match the content
	contentRecord                     // first sight, or a change noted: write the status
	contentWait                       // the pool does not serve the new content yet
	contentPurge                      // purge the pool's entries, then record
)

// decideContent compares a pool's revision with the one its entries came
// from. rolledOut says the pool's Deployment runs only pods of its current
// template.
func decideContent(rec *v1.PoolContent, now poolRevision, rolledOut bool, at time.Time) (contentStep, time.Duration) {
	if rec == nil {
		return contentRecord, 0 // a new tier, or a pool newly behind it: nothing cached from older content
	}
	if rec.Revision == now.String() && rec.Pending == "" {
		return contentCurrent, 0
	}
	if rec.Pending != now.String() || rec.PendingSince == nil {
		return contentRecord, 0 // note the new revision (again, if it changed meanwhile) and when it came
	}
	if !rolledOut {
		return contentWait, contentPoll
	}
	if parseRevision(rec.Revision).configMap != now.configMap {
		if wait := configMapSettle - at.Sub(rec.PendingSince.Time); wait > 0 {
			return contentWait, wait
		}
	}
	return contentPurge, 0
}

// syncPoolContent purges the entries of pools whose content changed, and
// says when to look again.
func (r *CachePolicyReconciler) syncPoolContent(ctx context.Context, policy *v1.CachePolicy, pools []string) (time.Duration, error) {
	var next time.Duration
	soonest := func(d time.Duration) {
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	var kept []v1.PoolContent
	at := readClock(r.Clock)
	for _, pool := range pools {
		rev, hasConfigMap, rolledOut, err := r.poolRevision(ctx, policy.Namespace, pool)
		if err != nil {
			return 0, err
		}
		if rev == nil {
			continue // no workers yet
		}
		if hasConfigMap {
			soonest(contentPoll)
		}
		rec := findPoolContent(policy.Status.PoolContent, pool)
		step, wait := decideContent(rec, *rev, rolledOut, at)
		switch step {
		case contentCurrent:
			kept = append(kept, *rec)
		case contentRecord:
			if rec == nil {
				kept = append(kept, v1.PoolContent{Pool: pool, Revision: rev.String()})
				break
			}
			updated := *rec
			updated.Pending, updated.PendingSince = rev.String(), &metav1.Time{Time: at.Truncate(time.Second)}
			kept = append(kept, updated)
			soonest(time.Second)
		case contentWait:
			kept = append(kept, *rec)
			soonest(wait)
		case contentPurge:
			n, err := r.purgeTier(ctx, policy, pool)
			if err != nil {
				return 0, err
			}
			r.Recorder.Eventf(policy, nil, corev1.EventTypeNormal, "Purged", "PurgeContent",
				"the content of pool %s changed: purged %d entries", pool, n)
			kept = append(kept, v1.PoolContent{Pool: pool, Revision: rev.String(), PurgedAt: &metav1.Time{Time: at.Truncate(time.Second)}})
		}
	}
	policy.Status.PoolContent = kept
	return next, nil
}

func findPoolContent(list []v1.PoolContent, pool string) *v1.PoolContent {
	for i := range list {
		if list[i].Pool == pool {
			return &list[i]
		}
	}
	return nil
}

// poolRevision reads a pool's content revision; nil when the pool has no
// Deployment yet.
func (r *CachePolicyReconciler) poolRevision(ctx context.Context, namespace, pool string) (rev *poolRevision, hasConfigMap, rolledOut bool, err error) {
	var dep appsv1.Deployment
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: vocabulary.PoolName(pool)}, &dep); err != nil {
		return nil, false, false, client.IgnoreNotFound(err)
	}
	template, err := json.Marshal(dep.Spec.Template)
	if err != nil {
		return nil, false, false, err
	}
	sum := sha256.Sum256(template)
	rev = &poolRevision{template: hex.EncodeToString(sum[:8])}
	var ap v1.AppPool
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pool}, &ap); client.IgnoreNotFound(err) != nil {
		return nil, false, false, err
	}
	if c := ap.Spec.Content; c != nil && c.ConfigMap.Name != "" {
		hasConfigMap = true
		// The user's ConfigMaps are not in the operator's cache (it holds only
		// its own children): read it from the API server.
		var cm corev1.ConfigMap
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: string(c.ConfigMap.Name)}, &cm)
		switch {
		case apierrors.IsNotFound(err):
			rev.configMap = "missing"
		case err != nil:
			return nil, false, false, err
		default:
			rev.configMap = cm.ResourceVersion
		}
	}
	return rev, hasConfigMap, deploymentRolledOut(&dep), nil
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

// syncPurgeRequest answers a new webfarm.dev/purge annotation.
func (r *CachePolicyReconciler) syncPurgeRequest(ctx context.Context, policy *v1.CachePolicy) error {
	token := policy.Annotations[v1.PurgeAnnotation]
	if token == "" || (policy.Status.LastPurge != nil && policy.Status.LastPurge.Token == token) {
		return nil
	}
	n, err := r.purgeTier(ctx, policy, "")
	if err != nil {
		return err
	}
	policy.Status.LastPurge = &v1.CachePurge{Token: token, Time: metav1.Time{Time: readClock(r.Clock).Truncate(time.Second)}, Entries: n}
	r.Recorder.Eventf(policy, nil, corev1.EventTypeNormal, "Purged", "Purge", "purged %d entries (%s=%s)", n, v1.PurgeAnnotation, token)
	return nil
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
