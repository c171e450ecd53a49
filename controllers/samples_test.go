package controllers_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
)

// kubectl runs the real kubectl against the test control plane.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(testutil.Tool(t, "WEBFARM_KUBECTL", "kubectl"), append([]string{"--kubeconfig", kubeconfigPath}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestTheSamplesApplyWithKubectlAndBecomeReady(t *testing.T) {
	ns := newNamespace(t)
	out := kubectl(t, "apply", "-n", ns, "-f", filepath.Join(testutil.RepoRoot(), "config", "samples"))
	for _, want := range []string{"webfarm.webfarm.dev/contoso created", "apppool.webfarm.dev/www created", "cachepolicy.webfarm.dev/static-content created"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply printed no %q:\n%s", want, out)
		}
	}

	// Play the Deployment controller's part: this control plane has no nodes.
	for _, d := range []string{"contoso-frontend", "www-pool", "images-pool", "static-content-cache"} {
		testutil.Eventually(t, timeout, func() error { return get(&appsv1.Deployment{}, ns, d) })
		markDeploymentReady(t, ns, d)
	}
	farm := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contoso"}}
	pool := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "images"}}
	policy := &v1.CachePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "static-content"}}
	testutil.Eventually(t, timeout, func() error {
		return errorsJoin(
			readyCondition(farm, func() []metav1.Condition { return farm.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable),
			readyCondition(pool, func() []metav1.Condition { return pool.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable),
			readyCondition(policy, func() []metav1.Condition { return policy.Status.Conditions }, metav1.ConditionTrue, v1.ReasonAvailable),
		)
	})

	t.Run("kubectl get shows hosts, pools, phase and readiness", func(t *testing.T) {
		got := kubectl(t, "get", "-n", ns, "webfarms,apppools,cachepolicies")
		for _, want := range []string{
			"HOSTS", "POOLS", "FRONTEND", "READY",
			"contoso   3       2       2/2",
			"PHASE", "REPLICAS", "REQ/S", "MCYCLES/REQ",
			"images   Running   2          2/2",
			"THRESHOLD", "TTL", "HIT %", "OBJECTS",
			"static-content   1           60s",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("kubectl get lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("a singular kind name finds one object", func(t *testing.T) {
		got := kubectl(t, "get", "-n", ns, "webfarm", "contoso", "-o", "name")
		if strings.TrimSpace(got) != "webfarm.webfarm.dev/contoso" {
			t.Errorf("kubectl get webfarm contoso printed %q", got)
		}
	})
	t.Run("the category web lists all three kinds", func(t *testing.T) {
		got := kubectl(t, "get", "-n", ns, "web", "-o", "name")
		if strings.Count(got, "\n") != 4 {
			t.Errorf("kubectl get web printed:\n%s", got)
		}
	})
	t.Run("short names work", func(t *testing.T) {
		got := kubectl(t, "get", "-n", ns, "wf,ap,cp", "-o", "name")
		for _, want := range []string{"webfarm.webfarm.dev/contoso", "apppool.webfarm.dev/www", "cachepolicy.webfarm.dev/static-content"} {
			if !strings.Contains(got, want) {
				t.Errorf("kubectl get wf,ap,cp lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("kubectl explain documents the fields", func(t *testing.T) {
		got := kubectl(t, "explain", "apppool.spec.queue.length")
		if !strings.Contains(got, "AppPoolQueueLength") {
			t.Errorf("kubectl explain lacks the field's documentation:\n%s", got)
		}
	})
}

func errorsJoin(errs ...error) error {
	var msgs []string
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, e.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
