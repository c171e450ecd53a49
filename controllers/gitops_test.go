package controllers_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
)

// deploymentReady writes the status of a Deployment whose replicas are all
// ready and up to date, unless it already has it.
func deploymentReady(ns, name string) error {
	d := &appsv1.Deployment{}
	if err := get(d, ns, name); err != nil {
		return err
	}
	r := ptr.Deref(d.Spec.Replicas, 1)
	want := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r}
	if equality.Semantic.DeepEqual(d.Status, want) {
		return nil
	}
	d.Status = want
	return k8sClient.Status().Update(context.Background(), d)
}

// A GitOps tool applies the samples server-side, the operator reconciles
// them, and applying the same manifests again is a no-op: no conflict with
// any field the operator writes, and not one object changes.
func TestReapplyingTheSamplesServerSideChangesNothing(t *testing.T) {
	ns := newNamespace(t)
	samples := filepath.Join(testutil.RepoRoot(), "config", "samples")
	apply := func() string {
		return kubectl(t, "apply", "--server-side", "--field-manager=gitops", "-n", ns, "-f", samples)
	}
	apply()
	// Settled: every resource Ready for its generation, so the operator has
	// nothing left to write.
	farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contoso"}}
	www := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "www"}}
	images := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "images"}}
	policy := &v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "static-content"}}
	testutil.Eventually(t, timeout, func() error {
		// Play the Deployment controller's part (the test control plane has
		// none) again each time: a tier's Deployment changes once its pools'
		// Services have addresses.
		for _, d := range []string{"contoso-frontend", "www-pool", "images-pool", "static-content-cache"} {
			if err := deploymentReady(ns, d); err != nil {
				return err
			}
		}
		return errorsJoin(
			readyCondition(farm, func() []metav1.Condition { return farm.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable),
			readyCondition(www, func() []metav1.Condition { return www.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable),
			readyCondition(images, func() []metav1.Condition { return images.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable),
			readyCondition(policy, func() []metav1.Condition { return policy.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable),
		)
	})

	// Everything in the namespace, by kind/name -> resourceVersion.
	versions := func() map[string]string {
		out := kubectl(t, "get", "-n", ns, "webfarms,apppools,cachepolicies,deployments,services,configmaps,poddisruptionbudgets,serviceaccounts",
			"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
		m := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				m[k] = v
			}
		}
		return m
	}
	before := versions()
	if out := apply(); strings.Contains(out, "conflict") {
		t.Fatalf("the second apply conflicted:\n%s", out)
	}
	after := versions()
	for obj, v := range before {
		if after[obj] != v {
			t.Errorf("%s changed (resourceVersion %s -> %s)", obj, v, after[obj])
		}
	}
	if len(before) < 12 {
		t.Errorf("only %d objects compared: %v", len(before), before)
	}
	t.Logf("%d objects compared", len(before))
}
