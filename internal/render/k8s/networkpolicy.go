package k8s

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/vocabulary"
)

// namespaceNameLabel is set by the API server on every namespace to its
// name: no tenant can give its namespace another's.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// PoolNetworkPolicy admits to a pool's workers only its peers' frontends and
// cache tiers (on the port they send requests to) and the operator's pods
// (the activator forwards there; the status port is the collectors'). The
// kubelet's probes come from the node, which NetworkPolicy implementations
// admit on their own (pod selectors cannot name a node). Nil when the
// platform asks for no isolation.
func PoolNetworkPolicy(p model.Pool, peers model.Peers) *networkingv1ac.NetworkPolicyApplyConfiguration {
	iso := p.Platform.Isolation
	if iso == nil {
		return nil
	}
	httpPort := int32(nginx.HTTPPort)
	if p.HTTP2() {
		httpPort = nginx.H2CPort
	}
	var from []*networkingv1ac.NetworkPolicyPeerApplyConfiguration
	for _, farm := range peers.Farms {
		from = append(from, podsOf(p.Namespace, SelectorLabels(vocabulary.ComponentFrontend, farm)))
	}
	for _, policy := range peers.CachePolicies {
		from = append(from, podsOf(p.Namespace, SelectorLabels(vocabulary.ComponentCache, policy)))
	}
	c := children{component: vocabulary.ComponentPool, instance: p.Name, name: vocabulary.PoolName(p.Name), namespace: p.Namespace,
		owner: Owner{Kind: "AppPool", Name: p.Name, UID: p.UID}}
	return c.networkPolicy(ingress(from, httpPort), operatorIngress(iso, httpPort, nginx.StatusPort))
}

// CacheNetworkPolicy admits to a cache tier only its peers' frontends and
// the operator's pods (its collectors read, and its purges reach, the
// agents). Nil when the platform asks for no isolation.
func CacheNetworkPolicy(cache model.Cache, peers model.Peers) *networkingv1ac.NetworkPolicyApplyConfiguration {
	iso := cache.Platform.Isolation
	if iso == nil {
		return nil
	}
	var from []*networkingv1ac.NetworkPolicyPeerApplyConfiguration
	for _, farm := range peers.Farms {
		from = append(from, podsOf(cache.Namespace, SelectorLabels(vocabulary.ComponentFrontend, farm)))
	}
	c := children{component: vocabulary.ComponentCache, instance: cache.Name, name: vocabulary.CacheName(cache.Name), namespace: cache.Namespace,
		owner: Owner{Kind: "CachePolicy", Name: cache.Name, UID: cache.UID}}
	return c.networkPolicy(ingress(from, nginx.HTTPPort), operatorIngress(iso, vocabulary.AgentAdminPort))
}

// networkPolicy selects the children's pods and admits the rules given
// (nil ones left out); with none, nothing: the policy type Ingress without
// a rule denies all.
func (c children) networkPolicy(rules ...*networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration) *networkingv1ac.NetworkPolicyApplyConfiguration {
	spec := networkingv1ac.NetworkPolicySpec().
		WithPodSelector(selector(c.component, c.instance)).
		WithPolicyTypes("Ingress")
	for _, r := range rules {
		if r != nil {
			spec = spec.WithIngress(r)
		}
	}
	return objectMeta(networkingv1ac.NetworkPolicy(c.name, c.namespace), c.component, c.instance, c.owner).WithSpec(spec)
}

// ingress admits the peers to the ports; nil without peers, since a rule
// with no peers would admit everyone.
func ingress(from []*networkingv1ac.NetworkPolicyPeerApplyConfiguration, ports ...int32) *networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration {
	if len(from) == 0 {
		return nil
	}
	rule := networkingv1ac.NetworkPolicyIngressRule().WithFrom(from...)
	for _, port := range ports {
		rule = rule.WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(port)))
	}
	return rule
}

func operatorIngress(iso *model.Isolation, ports ...int32) *networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration {
	if iso.OperatorNamespace == "" || len(iso.OperatorPodLabels) == 0 {
		return nil
	}
	return ingress([]*networkingv1ac.NetworkPolicyPeerApplyConfiguration{podsOf(iso.OperatorNamespace, iso.OperatorPodLabels)}, ports...)
}

// podsOf selects the pods with the labels in the namespace of that name.
func podsOf(namespace string, labels map[string]string) *networkingv1ac.NetworkPolicyPeerApplyConfiguration {
	return networkingv1ac.NetworkPolicyPeer().
		WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: namespace})).
		WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(labels))
}
