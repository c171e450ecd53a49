package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// recyclingWorker is the worker of the pool the operator marked for
// recycling, and why ("" for none yet).
func recyclingWorker(ns, pool string) (string, v1.RecycleReason, error) {
	var pods corev1.PodList
	if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{vocabulary.LabelInstance: pool}); err != nil {
		return "", "", err
	}
	for _, p := range pods.Items {
		if r := p.Annotations[v1.RecycleAnnotation]; r != "" {
			if cost := p.Annotations["controller.kubernetes.io/pod-deletion-cost"]; cost != "-2147483648" {
				return "", "", fmt.Errorf("pod %s is marked for recycling with deletion cost %q, want the lowest", p.Name, cost)
			}
			return p.Name, v1.RecycleReason(r), nil
		}
	}
	return "", "", nil
}

func expectRecycling(t *testing.T, ns, pool string, want v1.RecycleReason, notWorker string) string {
	t.Helper()
	var marked string
	testutil.Eventually(t, timeout, func() error {
		name, reason, err := recyclingWorker(ns, pool)
		switch {
		case err != nil:
			return err
		case name == "" || name == notWorker:
			return fmt.Errorf("no worker of %s marked for recycling yet", pool)
		case reason != want:
			return fmt.Errorf("%s marked for %s, want %s", name, reason, want)
		}
		marked = name
		return nil
	})
	return marked
}

// poke changes a pool's metadata so that the operator looks at it again
// after the test moved its clock.
func poke(t *testing.T, pool *v1.AppPool) {
	t.Helper()
	update(t, pool, func() {
		if pool.Annotations == nil {
			pool.Annotations = map[string]string{}
		}
		pool.Annotations["test.webfarm.dev/poke"] = time.Now().Format(time.RFC3339Nano)
	})
}

// IIS PeriodicRestartTime, on a real API server with the operator's clock
// moved past the interval: the workers are replaced one at a time, each
// replacement Ready before the pool returns to its size, and the status
// and an event say so.
func TestWorkersPastTheRecyclingIntervalAreReplacedOneAtATime(t *testing.T) {
	ns := newNamespace(t)
	pool := appPool(ns, "shop")
	pool.Spec.Recycling.Interval = "10m"
	create(t, pool)
	expectReplicas(t, ns, "shop", 2)
	first := readyPod(t, ns, "shop-pool-a", vocabulary.ComponentPool, "shop", "")
	second := readyPod(t, ns, "shop-pool-b", vocabulary.ComponentPool, "shop", "")
	markDeploymentReady(t, ns, vocabulary.PoolName("shop"))

	operatorClock.step(t, 11*time.Minute)
	poke(t, pool)
	marked := expectRecycling(t, ns, "shop", v1.RecycleReasonInterval, "")
	expectReplicas(t, ns, "shop", 3) // the replacement
	expectEvent(t, ns, "shop", v1.ReasonRecycled, marked)
	testutil.Eventually(t, timeout, func() error {
		if err := get(pool, ns, "shop"); err != nil {
			return err
		}
		if len(pool.Status.LastRecycles) != 1 || pool.Status.LastRecycles[0].Worker != marked || pool.Status.LastRecycles[0].Reason != v1.RecycleReasonInterval {
			return fmt.Errorf("status.lastRecycles = %+v, want the Interval recycle of %s", pool.Status.LastRecycles, marked)
		}
		return nil
	})

	// The replacement is not Ready yet: still three. Once it is, two: the
	// ReplicaSet removes the marked worker.
	replacement := readyPod(t, ns, "shop-pool-c", vocabulary.ComponentPool, "shop", "")
	expectReplicas(t, ns, "shop", 2)

	// The ReplicaSet deletes the marked worker; the other old one is next.
	other := first.Name
	if marked == first.Name {
		other = second.Name
	}
	if err := k8sClient.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: marked}}); err != nil {
		t.Fatal(err)
	}
	if next := expectRecycling(t, ns, "shop", v1.RecycleReasonInterval, marked); next != other {
		t.Fatalf("%s marked next, want %s (the replacement %s is new)", next, other, replacement.Name)
	}
	expectReplicas(t, ns, "shop", 3)
}

// IIS PeriodicRestartSchedule: at a time of day in the pool's time zone,
// workers started before it are recycled.
func TestWorkersAreRecycledAtAScheduledTimeInThePoolsTimeZone(t *testing.T) {
	ns := newNamespace(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := operatorClock.Now().Add(5 * time.Minute).In(berlin)
	pool := appPool(ns, "shop")
	pool.Spec.Recycling.Schedule = v1.RecycleSchedule{Times: []string{at.Format("15:04")}, TimeZone: "Europe/Berlin"}
	create(t, pool)
	expectReplicas(t, ns, "shop", 2)
	readyPod(t, ns, "shop-pool-a", vocabulary.ComponentPool, "shop", "")
	readyPod(t, ns, "shop-pool-b", vocabulary.ComponentPool, "shop", "")
	markDeploymentReady(t, ns, vocabulary.PoolName("shop"))

	// Before the time: nothing. The pool is looked at, and stays at two.
	poke(t, pool)
	expectReplicas(t, ns, "shop", 2)
	if name, _, err := recyclingWorker(ns, "shop"); err != nil || name != "" {
		t.Fatalf("before the scheduled time: %q marked (%v)", name, err)
	}
	operatorClock.step(t, 6*time.Minute)
	poke(t, pool)
	marked := expectRecycling(t, ns, "shop", v1.RecycleReasonSchedule, "")
	expectReplicas(t, ns, "shop", 3)
	expectEvent(t, ns, "shop", v1.ReasonRecycled, "scheduled recycle at "+at.Format("15:04"))
	t.Logf("%s recycled at the scheduled %s Berlin time", marked, at.Format("15:04"))
}
