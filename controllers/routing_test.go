package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// endpointSlice stands in for what the EndpointSlice controller (not part of
// envtest) makes of a generated Service: its labels, the "http" port, and
// each address with its conditions.
func endpointSlice(ns, name, component, instance string, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: component, vocabulary.LabelInstance: instance,
			discoveryv1.LabelServiceName: instance + "-" + component,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints:   endpoints,
	}
}

func endpoint(ip string, ready, serving, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{
		Ready: &ready, Serving: &serving, Terminating: &terminating,
	}}
}

// endpointsOf lists a cluster's endpoints in a farm's snapshot as "ip:port HEALTH".
func endpointsOf(nodeCluster, cluster string) ([]string, error) {
	return describeEndpoints(nodeCluster, cluster, func(e *endpointv3.LbEndpoint) string {
		return corev3.HealthStatus_name[int32(e.HealthStatus)]
	})
}

// weightsOf lists a cluster's endpoints in a farm's snapshot as "ip:port
// weight" (0: no weight, an equal share).
func weightsOf(nodeCluster, cluster string) ([]string, error) {
	return describeEndpoints(nodeCluster, cluster, func(e *endpointv3.LbEndpoint) string {
		return fmt.Sprint(e.GetLoadBalancingWeight().GetValue())
	})
}

// describeEndpoints lists a cluster's endpoints in a farm's snapshot as
// "ip:port " and what describe says of each.
func describeEndpoints(nodeCluster, cluster string, describe func(*endpointv3.LbEndpoint) string) ([]string, error) {
	r, ok := xdsServer.Routing(nodeCluster)
	if !ok {
		return nil, fmt.Errorf("no snapshot for %s", nodeCluster)
	}
	for _, la := range r.Endpoints {
		if la.ClusterName != cluster {
			continue
		}
		var out []string
		for _, locality := range la.Endpoints {
			for _, e := range locality.LbEndpoints {
				a := e.GetEndpoint().GetAddress().GetSocketAddress()
				out = append(out, fmt.Sprintf("%s:%d %s", a.GetAddress(), a.GetPortValue(), describe(e)))
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no cluster %s in the snapshot of %s (version %s)", cluster, nodeCluster, r.Version)
}

// breakersOf is a pool cluster's per-worker connection limit and queue length.
func breakersOf(nodeCluster, cluster string) ([2]uint32, error) {
	r, ok := xdsServer.Routing(nodeCluster)
	if !ok {
		return [2]uint32{}, fmt.Errorf("no snapshot for %s", nodeCluster)
	}
	for _, c := range r.Clusters {
		if c.Name == cluster {
			b := c.GetCircuitBreakers()
			return [2]uint32{
				b.GetPerHostThresholds()[0].GetMaxConnections().GetValue(),
				b.GetThresholds()[0].GetMaxPendingRequests().GetValue(),
			}, nil
		}
	}
	return [2]uint32{}, fmt.Errorf("no cluster %s in the snapshot of %s", cluster, nodeCluster)
}

func TestAFarmsSnapshotFollowsItsPoolsEndpointSlices(t *testing.T) {
	ns := newNamespace(t)
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), webFarm(ns, "contoso"))
	node := ns + "/contoso"
	slice := endpointSlice(ns, "shop-pool-abcde", vocabulary.ComponentPool, "shop",
		endpoint("10.0.0.2", true, true, false),
		endpoint("10.0.0.1", false, true, true),   // terminating, still serving: drains
		endpoint("10.0.0.3", false, false, false), // not ready: no traffic
	)
	create(t, slice, endpointSlice(ns, "static-cache-abcde", vocabulary.ComponentCache, "static", endpoint("10.0.1.1", true, true, false)))

	want := func(cluster string, expected ...string) func() error {
		return func() error {
			got, err := endpointsOf(node, cluster)
			if err != nil {
				return err
			}
			if !slices.Equal(got, expected) {
				return fmt.Errorf("%s endpoints %v, want %v", cluster, got, expected)
			}
			return nil
		}
	}
	testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("shop"), "10.0.0.1:8080 DRAINING", "10.0.0.2:8080 HEALTHY"))
	testutil.Eventually(t, 10*time.Second, want(vocabulary.CacheCluster("static"), "10.0.1.1:8080 HEALTHY"))
	testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("blog")))

	t.Run("a new ready endpoint reaches the snapshot", func(t *testing.T) {
		start := time.Now()
		update(t, slice, func() { slice.Endpoints = append(slice.Endpoints, endpoint("10.0.0.4", true, true, false)) })
		testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("shop"), "10.0.0.1:8080 DRAINING", "10.0.0.2:8080 HEALTHY", "10.0.0.4:8080 HEALTHY"))
		if took := time.Since(start); took > time.Second {
			t.Errorf("the snapshot took %s to follow the EndpointSlice, want under 1 s", took)
		}
	})

	t.Run("a pool's queue limits reach its cluster and follow edits", func(t *testing.T) {
		queue := func(perWorker, waiting uint32) func() error {
			return func() error {
				got, err := breakersOf(node, vocabulary.PoolCluster("blog"))
				if err != nil {
					return err
				}
				if want := [2]uint32{perWorker, waiting}; got != want {
					return fmt.Errorf("blog's per-worker connections and queue %v, want %v", got, want)
				}
				return nil
			}
		}
		// The fixture farm has two frontend replicas: each enforces half.
		testutil.Eventually(t, 10*time.Second, queue(50, 500))
		pool := appPool(ns, "blog")
		if err := get(pool, ns, "blog"); err != nil {
			t.Fatal(err)
		}
		update(t, pool, func() { pool.Spec.MaxConcurrentRequests = 7; pool.Spec.Queue.Length = 20 })
		testutil.Eventually(t, 10*time.Second, queue(4, 10))
	})

	t.Run("deleting the farm removes its snapshot", func(t *testing.T) {
		farm := webFarm(ns, "contoso")
		if err := k8sClient.Delete(context.Background(), farm); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			if _, ok := xdsServer.Routing(node); ok {
				return fmt.Errorf("snapshot of %s still served", node)
			}
			return nil
		})
	})
}

func TestAPoolsWorkersWeighTheirNodesClockRates(t *testing.T) {
	ns := newNamespace(t)
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-a"}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-b"}}
	create(t, a, b)
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), a)
		_ = k8sClient.Delete(context.Background(), b)
	})
	onNode := func(e discoveryv1.Endpoint, node string) discoveryv1.Endpoint {
		e.NodeName = &node
		return e
	}
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), webFarm(ns, "contoso"),
		endpointSlice(ns, "shop-pool-abcde", vocabulary.ComponentPool, "shop",
			onNode(endpoint("10.0.0.1", true, true, false), a.Name), onNode(endpoint("10.0.0.2", true, true, false), b.Name)),
		endpointSlice(ns, "static-cache-abcde", vocabulary.ComponentCache, "static",
			onNode(endpoint("10.0.1.1", true, true, false), a.Name), onNode(endpoint("10.0.1.2", true, true, false), b.Name)))
	node := ns + "/contoso"
	want := func(cluster string, expected ...string) func() error {
		return func() error {
			got, err := weightsOf(node, cluster)
			if err != nil {
				return err
			}
			if !slices.Equal(got, expected) {
				return fmt.Errorf("%s endpoints and weights %v, want %v", cluster, got, expected)
			}
			return nil
		}
	}
	label := func(n *corev1.Node, mhz string) {
		update(t, n, func() { n.Labels = map[string]string{vocabulary.NodeMHzLabel: mhz} })
	}

	t.Run("workers on unlabelled nodes share the pool's requests equally, without weights", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("shop"), "10.0.0.1:8080 0", "10.0.0.2:8080 0"))
	})
	t.Run("labelling a node 550 MHz weighs its worker 550 to the other's default 2000", func(t *testing.T) {
		label(a, "550")
		testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("shop"), "10.0.0.1:8080 11", "10.0.0.2:8080 40"))
	})
	t.Run("labelling the other node 900 MHz re-weighs them 550 to 900", func(t *testing.T) {
		label(b, "900")
		testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("shop"), "10.0.0.1:8080 11", "10.0.0.2:8080 18"))
	})
	t.Run("nodes of equal clocks give equal shares again", func(t *testing.T) {
		label(b, "550")
		testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("shop"), "10.0.0.1:8080 0", "10.0.0.2:8080 0"))
	})
	t.Run("a cache tier's endpoints keep equal shares whatever their nodes' clocks", func(t *testing.T) {
		label(b, "900")
		testutil.Eventually(t, 10*time.Second, want(vocabulary.PoolCluster("shop"), "10.0.0.1:8080 11", "10.0.0.2:8080 18"))
		testutil.Eventually(t, 10*time.Second, want(vocabulary.CacheCluster("static"), "10.0.1.1:8080 0", "10.0.1.2:8080 0"))
	})
}
