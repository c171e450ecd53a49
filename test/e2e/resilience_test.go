//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/test/e2e/framework"
)

// The farm the faults are tried on: a pool with a short queue (so that the
// operator has counts to keep in its status), an autoscaled pool (so that it
// needs Prometheus), and a frontend in front of both.
var resilienceFarm = testAppPool("live", 1, "maxConcurrentRequests: 1", "queue: {length: 10}") +
	testAppPool("auto", 1, "autoscaling: {minReplicas: 1, maxReplicas: 2}") +
	pathFarm("front", "queue.example", "100m", [2]string{"/auto", "auto"}, [2]string{"/", "live"})

const (
	// Pools created at once for the operator to be killed in the middle of;
	// scaled to zero, so that they cost the node nothing but API objects.
	crowdPools = 60
	// The crash comes once this many of them have their Deployment.
	crashAfterPools = 5
	// leaseDuration is controller-runtime's default: a crashed leader's lease
	// is free this long after its last renewal.
	leaseDuration = 15 * time.Second
)

// The operator under faults, with two replicas: rival writers racing its
// guarded status writes, its leader crashed in the middle of reconciling 60
// pools, its leader stopped, the API server restarted, Prometheus taken away.
// After each, every object converges to the state its spec asks for, with
// exactly its children and no orphans, and no count in a status is lost. The
// steps share one farm: each fault must leave it right for the next.
func TestTheOperatorConvergesThroughFaults(t *testing.T) {
	cluster.ScaleOperator(t, 2)
	t.Cleanup(func() { cluster.ScaleOperator(t, 1) })
	ns := cluster.Namespace(t)
	cl := cluster.Client(t)
	cluster.Apply(t, ns, resilienceFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/front", "apppool/live", "apppool/auto")
	url := cluster.ServiceURL(t, ns, "front-frontend")
	framework.ExpectBody(t, time.Minute, url+"/", "app on live-", "Host: queue.example")

	// The queue refusals the clients saw: the live pool's status must hold
	// exactly this many through every fault that follows.
	var refused int64

	must := func(ok bool) {
		if !ok {
			t.FailNow() // each step stands on the state the one before left
		}
	}

	must(t.Run("rival writers make the operator's guarded status writes conflict; it retries and loses no count", func(t *testing.T) {
		conflictsBefore := operatorConflicts(t)
		rival := startRival(cl, ns, "live")
		burst(url, 1, 300*time.Millisecond) // open the worker's connection
		for range 3 {                       // 20 at once on 1 slot and a queue of 10: 9 refused each time
			_, n, _, _ := tally(t, burst(url, 20, 500*time.Millisecond), envoy.QueueFullBody)
			refused += int64(n)
		}
		if refused == 0 {
			t.Fatal("the bursts were never refused: the queue did not fill")
		}
		// While the rival still writes, the operator's writes meet conflicts.
		framework.Eventually(t, time.Minute, func() error {
			if got := operatorConflicts(t); got <= conflictsBefore {
				return fmt.Errorf("the operator met %v conflicts (409) so far, %v before the rival started", got, conflictsBefore)
			}
			return nil
		})
		writes, last := rival.stop()
		t.Logf("the rival wrote the pool's annotations %d times; the operator met %v conflicts", writes, operatorConflicts(t)-conflictsBefore)
		if writes == 0 {
			t.Fatal("the rival wrote nothing")
		}
		expectRefused(t, cl, ns, refused)
		var pool v1.AppPool
		if err := cl.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "live"}, &pool); err != nil {
			t.Fatal(err)
		}
		for key, value := range last {
			if got := pool.Annotations[key]; got != value {
				t.Errorf("annotation %s is %q, want the rival's last %q: the operator overwrote metadata it does not own", key, got, value)
			}
		}
	}))

	must(t.Run("a leader crashed in the middle of reconciling 60 pools hands over, and every pool converges with exactly its children", func(t *testing.T) {
		leader := cluster.WaitLeader(t, time.Minute, func(framework.Leader) error { return nil })
		leaderPod := operatorPod(t, leader.Pod)
		for i := range crowdPools {
			var pool v1.AppPool
			if err := yaml.Unmarshal([]byte(strings.TrimSuffix(testAppPool(crowdPool(i), 0), "---\n")), &pool); err != nil {
				t.Fatal(err)
			}
			pool.Namespace = ns
			if err := cl.Create(t.Context(), &pool); err != nil {
				t.Fatal(err)
			}
		}
		framework.EventuallyEvery(t, 30*time.Second, 10*time.Millisecond, func() error {
			if n := crowdDeployments(t, cl, ns); n < crashAfterPools {
				return fmt.Errorf("%d of the new pools have a Deployment, waiting for %d", n, crashAfterPools)
			}
			return nil
		})
		cluster.CrashContainer(t, leaderPod, "manager")
		crashed := time.Now()
		withDeployment, reconciled := crowdDeployments(t, cl, ns), crowdReconciled(t, cl, ns)
		t.Logf("crashed leader %s with %d of %d pools reconciled and %d with a Deployment", leader.Identity, reconciled, crowdPools, withDeployment)
		if reconciled == crowdPools {
			t.Errorf("all %d pools were reconciled before the crash: it did not come in the middle", crowdPools)
		}

		next := cluster.WaitLeader(t, 2*time.Minute, func(l framework.Leader) error {
			if l.Identity == leader.Identity {
				return fmt.Errorf("the crashed leader's lease is still held")
			}
			return nil
		})
		t.Logf("%s took over %s after the crash (the lease lasts %s)", next.Identity, time.Since(crashed).Round(100*time.Millisecond), leaseDuration)

		framework.Eventually(t, 3*time.Minute, func() error {
			if n := crowdReconciled(t, cl, ns); n != crowdPools {
				return fmt.Errorf("%d of %d pools reconciled", n, crowdPools)
			}
			return nil
		})
		expectScaledToZero(t, cl, ns)
		expectExactChildren(t, cl, ns)
		expectOneReplicaSetPerCrowdPool(t, cl, ns)
		expectRefused(t, cl, ns, refused)
		if restarts := framework.Restarts([]corev1.Pod{operatorPod(t, leaderPod.Name)}); restarts == framework.Restarts([]corev1.Pod{leaderPod}) {
			t.Errorf("the crashed container of %s was not restarted", leaderPod.Name)
		}
	}))

	must(t.Run("a rival's writes to what the operator owns in a pool's children are undone, and its own fields are kept", func(t *testing.T) {
		ctx := t.Context()
		key := client.ObjectKey{Namespace: ns, Name: vocabulary.PoolName(crowdPool(2))}
		var config corev1.ConfigMap
		if err := cl.Get(ctx, key, &config); err != nil {
			t.Fatal(err)
		}
		rendered := config.Data
		cluster.Run(t, "scale", "deployment", "-n", ns, key.Name, "--replicas=1")
		cluster.Run(t, "label", "deployment", "-n", ns, key.Name, "e2e.webfarm.dev/rival=kept")
		cluster.Run(t, "patch", "configmap", "-n", ns, key.Name, "--type=merge", "-p", fmt.Sprintf(`{"data":{%q:"events {}"}}`, k8s.NginxConfigKey))
		framework.Eventually(t, time.Minute, func() error {
			var workers appsv1.Deployment
			if err := errors.Join(cl.Get(ctx, key, &workers), cl.Get(ctx, key, &config)); err != nil {
				return err
			}
			switch {
			case workers.Spec.Replicas == nil || *workers.Spec.Replicas != 0:
				return fmt.Errorf("Deployment %s asks for %v replicas, want its pool's 0", key.Name, workers.Spec.Replicas)
			case !maps.Equal(config.Data, rendered):
				return fmt.Errorf("ConfigMap %s still holds the rival's data", key.Name)
			case workers.Labels["e2e.webfarm.dev/rival"] != "kept":
				return fmt.Errorf("Deployment %s lost the rival's label: %v", key.Name, workers.Labels)
			}
			return nil
		})
	}))

	must(t.Run("a leader that is stopped hands its lease over at once, and the new leader reconciles the next change", func(t *testing.T) {
		leader := cluster.WaitLeader(t, time.Minute, func(framework.Leader) error { return nil })
		var standby string
		framework.Eventually(t, 2*time.Minute, func() error {
			standby = ""
			for _, p := range cluster.OperatorPods(t) {
				if p.Name != leader.Pod && p.DeletionTimestamp == nil && podReady(p) {
					standby = p.Name
				}
			}
			if standby == "" {
				return fmt.Errorf("no ready standby beside leader %s", leader.Pod)
			}
			return nil
		})
		stopped := time.Now()
		cluster.Run(t, "delete", "pod", "-n", cluster.Release.Namespace, leader.Pod, "--wait=false")
		next := cluster.WaitLeader(t, time.Minute, func(l framework.Leader) error {
			if l.Pod == leader.Pod {
				return fmt.Errorf("the stopped leader %s still holds the lease", l.Pod)
			}
			return nil
		})
		took := time.Since(stopped)
		t.Logf("%s took over %s after %s was deleted", next.Pod, took.Round(100*time.Millisecond), leader.Pod)
		// The standby retries every 2 s (with jitter); the deleted leader's
		// replacement tries as it starts: either may win the released lease.
		if next.Pod != standby {
			t.Logf("the lease went to %s, the deleted leader's replacement, before the standby %s retried", next.Pod, standby)
		}
		if took >= leaseDuration {
			t.Errorf("the standby took over after %s: the stopped leader did not give up its lease (it would expire after %s)", took, leaseDuration)
		}
		expectReconciled(t, cl, ns, crowdPool(0), `{"spec":{"queue":{"length":50}}}`)
		expectExactChildren(t, cl, ns)
	}))

	must(t.Run("the farm serves through an API server restart, and the operator reconciles the next change", func(t *testing.T) {
		probe := pollSteady(url+"/", "Host: queue.example")
		restarts := framework.Restarts(cluster.OperatorPods(t))
		restarted := time.Now()
		cluster.RestartComponent(t, "kube-apiserver")
		t.Logf("the API server answered again %s after the restart began", time.Since(restarted).Round(100*time.Millisecond))
		expectReconciled(t, cl, ns, crowdPool(1), `{"spec":{"queue":{"length":50}}}`)
		sent, failures := probe.stop()
		t.Logf("the farm answered %d of %d requests during the restart; operator container restarts: %d (a leader that cannot renew its lease for 10 s exits)",
			sent-len(failures), sent, cluster.SettledOperatorRestarts(t, 2*time.Minute)-restarts)
		if sent == 0 {
			t.Error("no request was sent during the restart")
		}
		for _, f := range failures {
			t.Errorf("request during the restart: %s", f)
		}
		framework.Eventually(t, 2*time.Minute, func() error {
			if n := crowdReconciled(t, cl, ns); n != crowdPools {
				return fmt.Errorf("%d of %d pools reconciled", n, crowdPools)
			}
			return nil
		})
		expectExactChildren(t, cl, ns)
		expectRefused(t, cl, ns, refused)
		cluster.WaitLeader(t, time.Minute, func(framework.Leader) error { return nil })
	}))

	t.Run("without Prometheus the autoscaled pool says so and holds its workers, and measures again when it is back", func(t *testing.T) {
		expectMetricsCondition(t, cl, ns, "auto", metav1.ConditionTrue, v1.ReasonMeasured, 2*time.Minute)
		restarts := cluster.SettledOperatorRestarts(t, 2*time.Minute)
		cluster.ScalePrometheus(t, 0)
		t.Cleanup(func() { cluster.ScalePrometheus(t, 1) }) // also when a check below fails: the tests after this need it
		expectMetricsCondition(t, cl, ns, "auto", metav1.ConditionFalse, v1.ReasonMetricsUnavailable, time.Minute)
		var workers appsv1.Deployment
		if err := cl.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: vocabulary.PoolName("auto")}, &workers); err != nil {
			t.Fatal(err)
		}
		if workers.Spec.Replicas == nil || *workers.Spec.Replicas != 1 {
			t.Errorf("the autoscaled pool has %v workers without metrics, want its 1 held", workers.Spec.Replicas)
		}
		if got := framework.Restarts(cluster.OperatorPods(t)); got != restarts {
			t.Errorf("the operator restarted %d times without Prometheus", got-restarts)
		}
		cluster.ScalePrometheus(t, 1)
		expectMetricsCondition(t, cl, ns, "auto", metav1.ConditionTrue, v1.ReasonMeasured, 3*time.Minute)
		cluster.EventuallyQuery(t, time.Minute, `up{job="webfarm-operator"} == 1`, func(s []framework.Sample) error {
			if len(s) == 0 {
				return errors.New("Prometheus does not scrape the operator yet")
			}
			return nil
		})
		expectRefused(t, cl, ns, refused)
	})
}

func crowdPool(i int) string { return fmt.Sprintf("crowd-%02d", i) }

// operatorConflicts is how many of the operator's writes the API server
// refused with 409 Conflict, over all replicas (client-go's request counter).
func operatorConflicts(t *testing.T) float64 {
	t.Helper()
	samples, err := cluster.Query(`sum(rest_client_requests_total{job="webfarm-operator",code="409"})`)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) == 0 {
		return 0 // no conflict yet: no series
	}
	return samples[0].Value
}

// rival writes a pool's annotations as fast as the API server takes them,
// from two writers, as a GitOps tool and a person with kubectl might: every
// write moves the pool's resourceVersion under the operator's feet.
type rival struct {
	cancel   context.CancelFunc
	stopping atomic.Bool // writers finish the write they are in: its outcome is known
	wg       sync.WaitGroup
	writes   atomic.Int64
	mu       sync.Mutex
	last     map[string]string // annotation -> last value written
}

func startRival(cl client.Client, namespace, pool string) *rival {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // bounded even if stop is never called
	r := &rival{cancel: cancel, last: map[string]string{}}
	for writer := range 2 {
		key := fmt.Sprintf("e2e.webfarm.dev/rival-%d", writer)
		r.wg.Go(func() {
			for i := 0; !r.stopping.Load() && ctx.Err() == nil; i++ {
				value := strconv.Itoa(i)
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
				target := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pool}}
				if err := cl.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch))); err == nil {
					r.writes.Add(1)
					r.mu.Lock()
					r.last[key] = value
					r.mu.Unlock()
				}
			}
		})
	}
	return r
}

// stop ends the writes and returns their count and the last value of each annotation.
func (r *rival) stop() (int64, map[string]string) {
	r.stopping.Store(true)
	r.wg.Wait()
	r.cancel()
	return r.writes.Load(), r.last
}

func operatorPod(t *testing.T, name string) corev1.Pod {
	t.Helper()
	for _, p := range cluster.OperatorPods(t) {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no operator pod %s", name)
	return corev1.Pod{}
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func crowd(t *testing.T, cl client.Client, ns string) []v1.AppPool {
	t.Helper()
	var pools v1.AppPoolList
	if err := cl.List(context.Background(), &pools, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(pools.Items, func(p v1.AppPool) bool { return !strings.HasPrefix(p.Name, "crowd-") })
}

// crowdReconciled counts the crowd's pools whose status is of their spec.
func crowdReconciled(t *testing.T, cl client.Client, ns string) int {
	t.Helper()
	n := 0
	for _, p := range crowd(t, cl, ns) {
		ready := meta.FindStatusCondition(p.Status.Conditions, v1.ConditionReady)
		if p.Status.ObservedGeneration == p.Generation && ready != nil && ready.ObservedGeneration == p.Generation {
			n++
		}
	}
	return n
}

// crowdDeployments counts the crowd's pools that have their Deployment.
func crowdDeployments(t *testing.T, cl client.Client, ns string) int {
	t.Helper()
	var deployments appsv1.DeploymentList
	if err := cl.List(context.Background(), &deployments, client.InNamespace(ns), client.MatchingLabels{vocabulary.LabelManagedBy: vocabulary.ManagedBy}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range deployments.Items {
		if strings.HasPrefix(d.Name, "crowd-") {
			n++
		}
	}
	return n
}

// expectScaledToZero: each crowd pool asks for no workers, so it is Idle and
// not Ready, saying why.
func expectScaledToZero(t *testing.T, cl client.Client, ns string) {
	t.Helper()
	for _, p := range crowd(t, cl, ns) {
		ready := meta.FindStatusCondition(p.Status.Conditions, v1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != v1.ReasonScaledToZero || p.Status.Phase != v1.PoolIdle {
			t.Errorf("pool %s: phase %q, Ready %+v, want Idle and Ready=False ScaledToZero", p.Name, p.Status.Phase, ready)
		}
	}
}

// childKinds are the children each kind of owner has, one of each.
var childKinds = map[string][]string{
	"AppPool": {"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"},
	"WebFarm": {"ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "ServiceAccount"},
}

// expectExactChildren checks that every AppPool and WebFarm in the namespace
// has exactly one child of each kind it owns, and that no generated object's
// owner is gone (an orphan) or missing.
func expectExactChildren(t *testing.T, cl client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	owners := map[types.UID]string{} // uid -> "Kind/name"
	want := map[string]int{}         // "Kind/name Kind" -> 1
	var pools v1.AppPoolList
	var farms v1.WebFarmList
	if err := errors.Join(cl.List(ctx, &pools, client.InNamespace(ns)), cl.List(ctx, &farms, client.InNamespace(ns))); err != nil {
		t.Fatal(err)
	}
	own := func(kind string, o metav1.Object) {
		owners[o.GetUID()] = kind + "/" + o.GetName()
		for _, child := range childKinds[kind] {
			want[kind+"/"+o.GetName()+" "+child] = 1
		}
	}
	for i := range pools.Items {
		own("AppPool", &pools.Items[i])
	}
	for i := range farms.Items {
		own("WebFarm", &farms.Items[i])
	}
	got := map[string]int{}
	var problems []string
	for kind, list := range map[string]client.ObjectList{
		"ConfigMap": &corev1.ConfigMapList{}, "Deployment": &appsv1.DeploymentList{}, "PodDisruptionBudget": &policyv1.PodDisruptionBudgetList{},
		"Service": &corev1.ServiceList{}, "ServiceAccount": &corev1.ServiceAccountList{},
	} {
		if err := cl.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{vocabulary.LabelManagedBy: vocabulary.ManagedBy}); err != nil {
			t.Fatal(err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			child := o.(client.Object)
			ref := metav1.GetControllerOf(child)
			if ref == nil {
				problems = append(problems, fmt.Sprintf("%s %s has no controller", kind, child.GetName()))
				return nil
			}
			owner, ok := owners[ref.UID]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s %s is an orphan: its owner %s %s (uid %s) is gone", kind, child.GetName(), ref.Kind, ref.Name, ref.UID))
				return nil
			}
			got[owner+" "+kind]++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for key, n := range got {
		if want[key] != n {
			problems = append(problems, fmt.Sprintf("%s: %d, want %d", key, n, want[key]))
		}
	}
	for key := range want {
		if got[key] == 0 {
			problems = append(problems, key+": missing")
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) == 0 {
		t.Logf("%d owners with exactly their %d children, no orphan", len(owners), len(got))
	}
}

// expectOneReplicaSetPerCrowdPool: a second ReplicaSet would mean the new
// leader rendered a pool's workers differently from the crashed one. (The
// Deployment controller makes the first one shortly after the Deployment.)
func expectOneReplicaSetPerCrowdPool(t *testing.T, cl client.Client, ns string) {
	t.Helper()
	framework.Eventually(t, time.Minute, func() error {
		var sets appsv1.ReplicaSetList
		if err := cl.List(context.Background(), &sets, client.InNamespace(ns)); err != nil {
			return err
		}
		perDeployment := map[string]int{}
		for _, rs := range sets.Items {
			if ref := metav1.GetControllerOf(&rs); ref != nil && strings.HasPrefix(ref.Name, "crowd-") {
				perDeployment[ref.Name]++
			}
		}
		var wrong []string
		for i := range crowdPools {
			if name := vocabulary.PoolName(crowdPool(i)); perDeployment[name] != 1 {
				wrong = append(wrong, fmt.Sprintf("%s has %d", name, perDeployment[name]))
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("Deployments without exactly one ReplicaSet: %s", strings.Join(wrong, ", "))
		}
		return nil
	})
}

// expectReconciled changes a pool's spec (a merge patch) and waits until its
// status is of the new generation.
func expectReconciled(t *testing.T, cl client.Client, ns, pool, patch string) {
	t.Helper()
	target := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pool}}
	if err := cl.Patch(t.Context(), target, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	framework.Eventually(t, 2*time.Minute, func() error {
		var p v1.AppPool
		if err := cl.Get(t.Context(), client.ObjectKeyFromObject(target), &p); err != nil {
			return err
		}
		if p.Status.ObservedGeneration != target.Generation {
			return fmt.Errorf("pool %s: status of generation %d, want %d", pool, p.Status.ObservedGeneration, target.Generation)
		}
		return nil
	})
	t.Logf("pool %s: generation %d reconciled %s after the change", pool, target.Generation, time.Since(changed).Round(100*time.Millisecond))
}

// expectRefused waits until the live pool's status counts exactly the queue
// refusals the clients saw.
func expectRefused(t *testing.T, cl client.Client, ns string, want int64) {
	t.Helper()
	framework.Eventually(t, time.Minute, func() error {
		var p v1.AppPool
		if err := cl.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "live"}, &p); err != nil {
			return err
		}
		if p.Status.Queue.Rejected != want {
			return fmt.Errorf("status.queue.rejected %d, want the %d refusals the clients saw", p.Status.Queue.Rejected, want)
		}
		return nil
	})
}

func expectMetricsCondition(t *testing.T, cl client.Client, ns, pool string, status metav1.ConditionStatus, reason string, timeout time.Duration) {
	t.Helper()
	var last *metav1.Condition
	framework.Eventually(t, timeout, func() error {
		var p v1.AppPool
		if err := cl.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pool}, &p); err != nil {
			return err
		}
		last = meta.FindStatusCondition(p.Status.Conditions, v1.ConditionMetricsAvailable)
		if last == nil || last.Status != status || last.Reason != reason {
			return fmt.Errorf("pool %s: MetricsAvailable %+v, want %s %s", pool, last, status, reason)
		}
		return nil
	})
	t.Logf("pool %s: MetricsAvailable=%s %s: %s", pool, last.Status, last.Reason, last.Message)
}
