package controllers_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// edgePlacement puts pods on tainted edge nodes, at a priority of their own.
func edgePlacement() v1.Placement {
	return v1.Placement{
		NodeSelector: map[string]v1.LabelValue{"node-role.example.com/edge": "true"},
		Tolerations:  []v1.Toleration{{Key: "node-role.example.com/edge", Operator: "Exists", Effect: "NoSchedule"}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
			}}},
		}}},
		PriorityClassName: "web-critical",
	}
}

// checkPlaced fails unless the Deployment's pods carry the placement, and
// spread as want says.
func checkPlaced(d *appsv1.Deployment, want v1.Placement, spread []corev1.TopologySpreadConstraint) error {
	pod := d.Spec.Template.Spec
	nodeSelector := map[string]string{}
	for k, v := range want.NodeSelector {
		nodeSelector[k] = string(v)
	}
	var tolerations []corev1.Toleration
	for _, t := range want.Tolerations {
		tolerations = append(tolerations, corev1.Toleration{Key: string(t.Key), Operator: corev1.TolerationOperator(t.Operator), Effect: corev1.TaintEffect(t.Effect)})
	}
	switch {
	case len(want.NodeSelector) > 0 && !reflect.DeepEqual(pod.NodeSelector, nodeSelector):
		return fmt.Errorf("%s: node selector %v, want %v", d.Name, pod.NodeSelector, nodeSelector)
	case !reflect.DeepEqual(pod.Tolerations, tolerations):
		return fmt.Errorf("%s: tolerations %+v, want %+v", d.Name, pod.Tolerations, tolerations)
	case !reflect.DeepEqual(pod.Affinity, want.Affinity):
		return fmt.Errorf("%s: affinity %+v, want %+v", d.Name, pod.Affinity, want.Affinity)
	case pod.PriorityClassName != want.PriorityClassName:
		return fmt.Errorf("%s: priority class %q, want %q", d.Name, pod.PriorityClassName, want.PriorityClassName)
	case !reflect.DeepEqual(pod.TopologySpreadConstraints, spread):
		return fmt.Errorf("%s: spread %+v, want %+v", d.Name, pod.TopologySpreadConstraints, spread)
	}
	return nil
}

// defaultSpread is the soft spread over nodes and zones of a workload's own pods.
func defaultSpread(component, instance string) []corev1.TopologySpreadConstraint {
	var out []corev1.TopologySpreadConstraint
	for _, key := range []string{corev1.LabelHostname, corev1.LabelTopologyZone} {
		out = append(out, corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:  &metav1.LabelSelector{MatchLabels: k8s.SelectorLabels(component, instance)},
			MatchLabelKeys: []string{appsv1.DefaultDeploymentUniqueLabelKey}})
	}
	return out
}

func TestEveryWorkloadIsPlacedAsItsSpecSaysAndTheFrontendServiceMeetsItsLoadBalancer(t *testing.T) {
	ns := newNamespace(t)
	shop := appPool(ns, "shop")
	shop.Spec.Placement = edgePlacement()
	shop.Spec.Placement.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: "DoNotSchedule", MinDomains: 3}}
	blog := appPool(ns, "blog")
	static := cachePolicy(ns, "static")
	static.Spec.Placement = v1.Placement{PriorityClassName: "cache-low", Tolerations: []v1.Toleration{{Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptr.To[int64](30)}}}
	farm := webFarm(ns, "web")
	farm.Spec.Frontend.Placement = edgePlacement()
	farm.Spec.Frontend.Service = v1.FrontendService{Type: "LoadBalancer", LoadBalancerClass: "service.k8s.aws/nlb",
		Annotations: map[string]string{
			"service.beta.kubernetes.io/aws-load-balancer-scheme":          "internet-facing",
			"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
		},
		LoadBalancerSourceRanges: []v1.CIDR{"198.51.100.0/24", "192.0.2.0/24"}}
	create(t, shop, blog, static, farm)

	zoneSpread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptr.To[int32](3),
		LabelSelector: &metav1.LabelSelector{MatchLabels: k8s.SelectorLabels(vocabulary.ComponentPool, "shop")}}}
	staticTolerations := []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}}
	testutil.Eventually(t, timeout, func() error {
		var d appsv1.Deployment
		for _, c := range []struct {
			name   string
			want   v1.Placement
			spread []corev1.TopologySpreadConstraint
		}{
			{vocabulary.PoolName("shop"), shop.Spec.Placement, zoneSpread},
			{vocabulary.PoolName("blog"), v1.Placement{}, defaultSpread(vocabulary.ComponentPool, "blog")},
			{vocabulary.FrontendName("web"), edgePlacement(), defaultSpread(vocabulary.ComponentFrontend, "web")},
		} {
			if err := get(&d, ns, c.name); err != nil {
				return err
			}
			if err := checkPlaced(&d, c.want, c.spread); err != nil {
				return err
			}
		}
		if err := get(&d, ns, vocabulary.CacheName("static")); err != nil {
			return err
		}
		pod := d.Spec.Template.Spec
		if pod.PriorityClassName != "cache-low" || !reflect.DeepEqual(pod.Tolerations, staticTolerations) ||
			!reflect.DeepEqual(pod.TopologySpreadConstraints, defaultSpread(vocabulary.ComponentCache, "static")) {
			return fmt.Errorf("the cache tier: priority class %q, tolerations %+v, spread %+v", pod.PriorityClassName, pod.Tolerations, pod.TopologySpreadConstraints)
		}

		var svc corev1.Service
		if err := get(&svc, ns, vocabulary.FrontendName("web")); err != nil {
			return err
		}
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || ptr.Deref(svc.Spec.LoadBalancerClass, "") != "service.k8s.aws/nlb" ||
			svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
			!slices.Equal(svc.Spec.LoadBalancerSourceRanges, []string{"192.0.2.0/24", "198.51.100.0/24"}) ||
			svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] != "internet-facing" ||
			svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] != "ip" {
			return fmt.Errorf("the frontend Service: type %s, class %v, policy %s, source ranges %v, annotations %v",
				svc.Spec.Type, svc.Spec.LoadBalancerClass, svc.Spec.ExternalTrafficPolicy, svc.Spec.LoadBalancerSourceRanges, svc.Annotations)
		}
		return nil
	})

	// An annotation removed from the farm leaves the Service; a placement
	// removed from the pool gives its workers the default spread back.
	update(t, farm, func() {
		delete(farm.Spec.Frontend.Service.Annotations, "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type")
		farm.Spec.Frontend.Service.ExternalTrafficPolicy = v1.ExternalTrafficCluster
	})
	update(t, shop, func() { shop.Spec.Placement = v1.Placement{} })
	testutil.Eventually(t, timeout, func() error {
		var svc corev1.Service
		if err := get(&svc, ns, vocabulary.FrontendName("web")); err != nil {
			return err
		}
		if _, ok := svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"]; ok || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
			return fmt.Errorf("the frontend Service: annotations %v, policy %s; want the target type gone and Cluster", svc.Annotations, svc.Spec.ExternalTrafficPolicy)
		}
		var d appsv1.Deployment
		if err := get(&d, ns, vocabulary.PoolName("shop")); err != nil {
			return err
		}
		return checkPlaced(&d, v1.Placement{}, defaultSpread(vocabulary.ComponentPool, "shop"))
	})
}
