package k8s_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/k8s"
)

var isolated = &model.Isolation{OperatorNamespace: "webfarm-system",
	OperatorPodLabels: map[string]string{"app.kubernetes.io/name": "webfarm-operator", "app.kubernetes.io/instance": "webfarm-operator"}}

// admitted is a policy's ingress rules, one line each: the peers
// (namespace:labels) and the ports they may reach.
func admitted(np *networkingv1ac.NetworkPolicyApplyConfiguration) []string {
	var lines []string
	for _, r := range np.Spec.Ingress {
		var peers, ports []string
		for _, p := range r.From {
			ns := p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
			var labels []string
			for _, k := range slices.Sorted(maps.Keys(p.PodSelector.MatchLabels)) {
				labels = append(labels, k+"="+p.PodSelector.MatchLabels[k])
			}
			peers = append(peers, ns+":"+strings.Join(labels, ","))
		}
		for _, p := range r.Ports {
			ports = append(ports, fmt.Sprintf("%s/%s", *p.Protocol, p.Port.String()))
		}
		lines = append(lines, strings.Join(peers, " ")+" -> "+strings.Join(ports, " "))
	}
	return lines
}

const (
	operatorPeer = "webfarm-system:app.kubernetes.io/instance=webfarm-operator,app.kubernetes.io/name=webfarm-operator"
	shopFrontend = "web:app.kubernetes.io/instance=shop,app.kubernetes.io/name=webfarm-frontend"
	blogFrontend = "web:app.kubernetes.io/instance=blog,app.kubernetes.io/name=webfarm-frontend"
	staticCache  = "web:app.kubernetes.io/instance=static,app.kubernetes.io/name=webfarm-cache"
)

func TestAPoolAdmitsOnlyItsFarmsCacheTiersAndTheOperator(t *testing.T) {
	http2 := pool()
	http2.App.Protocol = model.AppHTTP2
	tests := []struct {
		name  string
		pool  model.Pool
		peers model.Peers
		want  []string
	}{
		{"one farm's frontends reach the HTTP port, the operator also the status port", pool(), model.Peers{Farms: []string{"shop"}},
			[]string{shopFrontend + " -> TCP/8080", operatorPeer + " -> TCP/8080 TCP/8081"}},
		{"a pool reached by two farms and a cache tier admits all three", pool(),
			model.Peers{Farms: []string{"blog", "shop"}, CachePolicies: []string{"static"}},
			[]string{blogFrontend + " " + shopFrontend + " " + staticCache + " -> TCP/8080", operatorPeer + " -> TCP/8080 TCP/8081"}},
		{"an HTTP/2 pool is reached on its h2c port", http2, model.Peers{Farms: []string{"shop"}},
			[]string{shopFrontend + " -> TCP/8084", operatorPeer + " -> TCP/8084 TCP/8081"}},
		{"a pool no farm routes to admits the operator alone, never everyone", pool(), model.Peers{},
			[]string{operatorPeer + " -> TCP/8080 TCP/8081"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.pool.Platform.Isolation = isolated
			np := k8s.PoolNetworkPolicy(tt.pool, tt.peers)
			if got := admitted(np); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("admitted:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if *np.Name != "catalog-pool" || *np.Namespace != "web" || np.OwnerReferences[0].Kind == nil || *np.OwnerReferences[0].Kind != "AppPool" {
				t.Errorf("policy %s/%s owned by %+v; want web/catalog-pool owned by its AppPool", *np.Namespace, *np.Name, np.OwnerReferences)
			}
			want := map[string]string{"app.kubernetes.io/name": "webfarm-pool", "app.kubernetes.io/instance": "catalog"}
			if got := np.Spec.PodSelector.MatchLabels; !reflect.DeepEqual(got, want) || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{"Ingress"}) {
				t.Errorf("selects %v for %v; want the pool's workers for Ingress", got, np.Spec.PolicyTypes)
			}
		})
	}
}

func TestACacheTierAdmitsOnlyItsFarmsAndTheOperatorsAgentCalls(t *testing.T) {
	tests := []struct {
		name  string
		peers model.Peers
		want  []string
	}{
		{"its farms' frontends reach nginx, the operator the agent", model.Peers{Farms: []string{"blog", "shop"}},
			[]string{blogFrontend + " " + shopFrontend + " -> TCP/8080", operatorPeer + " -> TCP/8083"}},
		{"a tier no farm routes through admits the operator alone", model.Peers{},
			[]string{operatorPeer + " -> TCP/8083"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cache()
			c.Platform.Isolation = isolated
			np := k8s.CacheNetworkPolicy(c, tt.peers)
			if got := admitted(np); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("admitted:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if *np.Name != "static-cache" || *np.OwnerReferences[0].Kind != "CachePolicy" {
				t.Errorf("policy %s owned by %+v; want static-cache owned by its CachePolicy", *np.Name, np.OwnerReferences)
			}
		})
	}
}

func TestIsolationOffRendersNoPolicy(t *testing.T) {
	if np := k8s.PoolNetworkPolicy(pool(), model.Peers{Farms: []string{"shop"}}); np != nil {
		t.Errorf("pool policy %+v without isolation; want none", np)
	}
	if np := k8s.CacheNetworkPolicy(cache(), model.Peers{Farms: []string{"shop"}}); np != nil {
		t.Errorf("cache policy %+v without isolation; want none", np)
	}
}

func TestWithoutTheOperatorsPodsKnownAPolicyWithoutPeersAdmitsNothing(t *testing.T) {
	p := pool()
	p.Platform.Isolation = &model.Isolation{}
	np := k8s.PoolNetworkPolicy(p, model.Peers{})
	if len(np.Spec.Ingress) != 0 || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{"Ingress"}) {
		t.Errorf("ingress %+v of types %v; want no rule for Ingress (nothing admitted)", np.Spec.Ingress, np.Spec.PolicyTypes)
	}
}
