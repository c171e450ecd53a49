package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/scheme"
)

// What the resilience tests need beyond kubectl: a typed client (fast enough
// to catch the operator mid-reconcile and to race it), the leader election
// lease, and the faults themselves: a crashed container, a restarted
// component of the cluster.

// LeaseName is the operator's leader election lease (cmd/manager).
const LeaseName = "webfarm-operator.webfarm.dev"

// Client is a controller-runtime client of the cluster, with the operator's
// scheme (the built-in kinds and webfarm.dev).
func (c *Cluster) Client(t testing.TB) client.Client {
	t.Helper()
	c.client.once.Do(func() {
		config, err := clientcmd.BuildConfigFromFlags("", c.local.Kubeconfig())
		if err != nil {
			c.client.err = err
			return
		}
		config.QPS, config.Burst = 200, 400 // a test that races the operator must not be throttled by its own client
		c.client.c, c.client.err = client.New(config, client.Options{Scheme: scheme.New()})
	})
	if c.client.err != nil {
		t.Fatal(c.client.err)
	}
	return c.client.c
}

// Leader is the holder of the operator's lease: the pod's name and the
// identity (pod name and a per-process id) that holds it.
type Leader struct {
	Pod, Identity string
}

// Leader reads who holds the operator's lease now; an empty Leader when nobody does.
func (c *Cluster) Leader(ctx context.Context, cl client.Client) (Leader, error) {
	var lease coordinationv1.Lease
	if err := cl.Get(ctx, client.ObjectKey{Namespace: c.Release.Namespace, Name: LeaseName}, &lease); err != nil {
		return Leader{}, err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return Leader{}, nil
	}
	id := *lease.Spec.HolderIdentity
	pod, _, _ := strings.Cut(id, "_") // controller-runtime's identity: <hostname>_<uuid>
	return Leader{Pod: pod, Identity: id}, nil
}

// WaitLeader waits until the lease is held by an operator pod that exists
// and for which accept returns nil, and returns that holder.
func (c *Cluster) WaitLeader(t testing.TB, timeout time.Duration, accept func(Leader) error) Leader {
	t.Helper()
	cl := c.Client(t)
	var got Leader
	EventuallyEvery(t, timeout, 100*time.Millisecond, func() error {
		l, err := c.Leader(context.Background(), cl)
		if err != nil {
			return err
		}
		if l.Pod == "" {
			return fmt.Errorf("nobody holds lease %s", LeaseName)
		}
		var pod corev1.Pod
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: c.Release.Namespace, Name: l.Pod}, &pod); err != nil {
			return fmt.Errorf("lease holder %s: %w", l.Identity, err)
		}
		if err := accept(l); err != nil {
			return err
		}
		got = l
		return nil
	})
	return got
}

// OperatorPods are the operator's pods, by name.
func (c *Cluster) OperatorPods(t testing.TB) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.Client(t).List(context.Background(), &pods, client.InNamespace(c.Release.Namespace),
		client.MatchingLabels{"app.kubernetes.io/name": "webfarm-operator"}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// CrashContainer kills a pod's container with SIGKILL, as a crash would: the
// process gets no chance to finish its work or to give up its lease, and the
// kubelet starts the container again.
func (c *Cluster) CrashContainer(t testing.TB, pod corev1.Pod, container string) {
	t.Helper()
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container {
			if err := c.local.KillContainer(context.Background(), s.ContainerID); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("pod %s has no container %q", pod.Name, container)
}

// RestartComponent stops one process of the local cluster (kube-apiserver,
// etcd, kubelet, ...) and starts it again with the same command line; it
// returns when the component runs again (for the API server: answers /readyz).
func (c *Cluster) RestartComponent(t testing.TB, component string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.local.Restart(ctx, component); err != nil {
		t.Fatal(err)
	}
}

// Restarts sums the restart counts of the pods' containers.
func Restarts(pods []corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			n += s.RestartCount
		}
	}
	return n
}

// SettledOperatorRestarts waits until every operator pod is Ready and their
// containers' restart count has held for 10 s, and returns it. A leader
// that lost its lease while the API server was away exits, and the kubelet
// restarts it; the pod's status reaches the API server some seconds after
// the API server is back, so a count read at once may not hold it yet.
func (c *Cluster) SettledOperatorRestarts(t testing.TB, timeout time.Duration) int32 {
	t.Helper()
	var count int32 = -1
	var since time.Time
	Eventually(t, timeout, func() error {
		pods := c.OperatorPods(t)
		for _, p := range pods {
			ready := false
			for _, cond := range p.Status.Conditions {
				ready = ready || (cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue)
			}
			if !ready {
				return fmt.Errorf("operator pod %s is not Ready", p.Name)
			}
		}
		if n := Restarts(pods); n != count {
			count, since = n, time.Now()
		}
		if held := time.Since(since); held < 10*time.Second {
			return fmt.Errorf("the operator's restart count %d has held for %s", count, held.Round(time.Second))
		}
		return nil
	})
	return count
}

// OperatorPods selects the operator's pods (the chart's label).
const OperatorPods = "app.kubernetes.io/name=webfarm-operator"

// ScaleOperator sets the operator's replicas (the chart's Deployment) and
// waits until that many are available.
func (c *Cluster) ScaleOperator(t testing.TB, replicas int) {
	t.Helper()
	c.scale(t, c.Release.Namespace, c.Release.Name, OperatorPods, replicas)
}

func (c *Cluster) scale(t testing.TB, namespace, deployment, podSelector string, replicas int) {
	t.Helper()
	c.Run(t, "scale", "deployment", "-n", namespace, deployment, fmt.Sprintf("--replicas=%d", replicas))
	c.Run(t, "rollout", "status", "deployment", "-n", namespace, deployment, "--timeout=3m")
	Eventually(t, 2*time.Minute, func() error { // rollout status does not wait for the removed pods to go
		pods := c.Pods(t, namespace, podSelector)
		if len(pods) != replicas {
			return fmt.Errorf("%s/%s has %d pods, want %d", namespace, deployment, len(pods), replicas)
		}
		return nil
	})
}
