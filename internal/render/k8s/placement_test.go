package k8s_test

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/vocabulary"
)

// edgePlacement runs pods on tainted edge nodes, away from each other, at a
// priority of their own.
func edgePlacement() model.Placement {
	return model.Placement{
		NodeSelector: map[string]string{"node-role.example.com/edge": "true"},
		Tolerations:  []corev1.Toleration{{Key: "node-role.example.com/edge", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/instance": "shop"}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}},
		PriorityClassName: "web-critical",
	}
}

// lbFarm is a farm behind an AWS Network Load Balancer, its frontends on
// edge nodes.
func lbFarm() model.Farm {
	f := farm()
	f.Frontend.ServiceType, f.Frontend.NodePort = "LoadBalancer", 0
	f.Frontend.Service = model.ServiceExposure{
		ExternalTrafficPolicy: "Local",
		LoadBalancerClass:     "service.k8s.aws/nlb",
		Annotations: map[string]string{
			"service.beta.kubernetes.io/aws-load-balancer-scheme":          "internet-facing",
			"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
		},
		LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24")},
	}
	f.Frontend.Placement = edgePlacement()
	return f
}

// workloads are the three kinds of Deployments the operator renders, each
// with the placement given.
func workloads(p model.Placement) map[string]*appsv1ac.DeploymentApplyConfiguration {
	f, wp, c := farm(), pool(), cache()
	f.Frontend.Placement, wp.Placement, c.Placement = p, p, p
	return map[string]*appsv1ac.DeploymentApplyConfiguration{
		"frontend": k8s.Frontend(f, nil).Deployment,
		"pool":     k8s.Pool(wp, "").Deployment,
		"cache":    k8s.Cache(c, "", "").Deployment,
	}
}

func TestEveryWorkloadRunsWhereItsPlacementSays(t *testing.T) {
	own := map[string]map[string]string{
		"frontend": k8s.SelectorLabels(vocabulary.ComponentFrontend, "shop"),
		"pool":     k8s.SelectorLabels(vocabulary.ComponentPool, "catalog"),
		"cache":    k8s.SelectorLabels(vocabulary.ComponentCache, "static"),
	}
	zoneOnly := model.Placement{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
		{MaxSkew: 2, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule},
	}}
	tests := []struct {
		name      string
		placement model.Placement
		check     func(t *testing.T, workload string, pod *corev1ac.PodSpecApplyConfiguration)
	}{
		{
			name: "without a placement the pods spread softly over nodes and zones, counting their own rollout's pods",
			check: func(t *testing.T, workload string, pod *corev1ac.PodSpecApplyConfiguration) {
				if len(pod.TopologySpreadConstraints) != 2 {
					t.Fatalf("%d spread constraints; want 2", len(pod.TopologySpreadConstraints))
				}
				for i, key := range []string{corev1.LabelHostname, corev1.LabelTopologyZone} {
					c := pod.TopologySpreadConstraints[i]
					if *c.TopologyKey != key || *c.MaxSkew != 1 || *c.WhenUnsatisfiable != corev1.ScheduleAnyway {
						t.Errorf("constraint %d: key %s, maxSkew %d, %s; want %s, 1, ScheduleAnyway", i, *c.TopologyKey, *c.MaxSkew, *c.WhenUnsatisfiable, key)
					}
					if !reflect.DeepEqual(c.LabelSelector.MatchLabels, own[workload]) || !reflect.DeepEqual(c.MatchLabelKeys, []string{"pod-template-hash"}) {
						t.Errorf("constraint %d counts %v by %v; want the workload's own pods %v by pod-template-hash", i, c.LabelSelector.MatchLabels, c.MatchLabelKeys, own[workload])
					}
				}
				if pod.NodeSelector != nil || pod.Tolerations != nil || pod.Affinity != nil || pod.PriorityClassName != nil {
					t.Errorf("an empty placement set node selector %v, tolerations %v, affinity %v, priority class %v", pod.NodeSelector, pod.Tolerations, pod.Affinity, pod.PriorityClassName)
				}
			},
		},
		{
			name:      "a node selector, tolerations, affinity and a priority class reach the pods as given, with the default spread",
			placement: edgePlacement(),
			check: func(t *testing.T, _ string, pod *corev1ac.PodSpecApplyConfiguration) {
				want := edgePlacement()
				if !reflect.DeepEqual(pod.NodeSelector, want.NodeSelector) {
					t.Errorf("node selector %v; want %v", pod.NodeSelector, want.NodeSelector)
				}
				if len(pod.Tolerations) != 1 || *pod.Tolerations[0].Key != "node-role.example.com/edge" ||
					*pod.Tolerations[0].Operator != corev1.TolerationOpExists || *pod.Tolerations[0].Effect != corev1.TaintEffectNoSchedule || pod.Tolerations[0].Value != nil {
					t.Errorf("tolerations %+v; want the edge nodes' taint, and no value", pod.Tolerations)
				}
				anti := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				if pod.Affinity.NodeAffinity != nil || pod.Affinity.PodAffinity != nil || len(anti) != 1 ||
					*anti[0].TopologyKey != corev1.LabelHostname || anti[0].Namespaces != nil || anti[0].NamespaceSelector != nil {
					t.Errorf("affinity %+v; want the one anti-affinity term, in the pod's own namespace", pod.Affinity)
				}
				if *pod.PriorityClassName != "web-critical" {
					t.Errorf("priority class %q; want web-critical", *pod.PriorityClassName)
				}
				if len(pod.TopologySpreadConstraints) != 2 {
					t.Errorf("%d spread constraints; want the default 2", len(pod.TopologySpreadConstraints))
				}
			},
		},
		{
			name:      "spread constraints of the placement replace the default, and one without a selector counts the workload's own pods",
			placement: zoneOnly,
			check: func(t *testing.T, workload string, pod *corev1ac.PodSpecApplyConfiguration) {
				if len(pod.TopologySpreadConstraints) != 1 {
					t.Fatalf("%d spread constraints; want the placement's 1", len(pod.TopologySpreadConstraints))
				}
				c := pod.TopologySpreadConstraints[0]
				if *c.TopologyKey != corev1.LabelTopologyZone || *c.MaxSkew != 2 || *c.WhenUnsatisfiable != corev1.DoNotSchedule || c.MatchLabelKeys != nil {
					t.Errorf("constraint %s, maxSkew %d, %s, matchLabelKeys %v; want it as given", *c.TopologyKey, *c.MaxSkew, *c.WhenUnsatisfiable, c.MatchLabelKeys)
				}
				if !reflect.DeepEqual(c.LabelSelector.MatchLabels, own[workload]) {
					t.Errorf("the constraint counts %v; want the workload's own pods %v", c.LabelSelector.MatchLabels, own[workload])
				}
			},
		},
	}
	for _, tt := range tests {
		for workload, d := range workloads(tt.placement) {
			t.Run(tt.name+" ("+workload+")", func(t *testing.T) { tt.check(t, workload, d.Spec.Template.Spec) })
		}
	}
}

func TestTheSamePlacementRendersTheSamePods(t *testing.T) {
	first := toYAML(t, workloads(edgePlacement())["pool"])
	for range 20 {
		if again := toYAML(t, workloads(edgePlacement())["pool"]); string(again) != string(first) {
			t.Fatalf("a second rendering differs:\n%s\nfirst:\n%s", again, first)
		}
	}
}

func TestTheFrontendServiceMeetsItsLoadBalancer(t *testing.T) {
	clusterIP := farm()
	clusterIP.Frontend.ServiceType, clusterIP.Frontend.NodePort, clusterIP.Frontend.Service = "ClusterIP", 0, model.ServiceExposure{}
	cluster := farm()
	cluster.Frontend.Service.ExternalTrafficPolicy = "Cluster"
	tests := []struct {
		name        string
		farm        model.Farm
		policy      corev1.ServiceExternalTrafficPolicy
		class       string
		annotations int
		ranges      []string
	}{
		{"a ClusterIP Service has no external traffic policy, class, annotations or source ranges", clusterIP, "", "", 0, nil},
		{"a NodePort Service keeps the client's address by default (Local)", farm(), corev1.ServiceExternalTrafficPolicyLocal, "", 0, nil},
		{"a NodePort Service may let every node pass traffic on (Cluster)", cluster, corev1.ServiceExternalTrafficPolicyCluster, "", 0, nil},
		{"a LoadBalancer Service gets its class, annotations and source ranges", lbFarm(), corev1.ServiceExternalTrafficPolicyLocal, "service.k8s.aws/nlb", 2, []string{"192.0.2.0/24", "198.51.100.0/24"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := k8s.Frontend(tt.farm, nil).Service
			if got := deref(svc.Spec.ExternalTrafficPolicy); got != tt.policy {
				t.Errorf("externalTrafficPolicy %q; want %q", got, tt.policy)
			}
			if got := deref(svc.Spec.LoadBalancerClass); got != tt.class {
				t.Errorf("loadBalancerClass %q; want %q", got, tt.class)
			}
			if len(svc.Annotations) != tt.annotations {
				t.Errorf("annotations %v; want %d", svc.Annotations, tt.annotations)
			}
			if !reflect.DeepEqual(svc.Spec.LoadBalancerSourceRanges, tt.ranges) {
				t.Errorf("loadBalancerSourceRanges %v; want %v", svc.Spec.LoadBalancerSourceRanges, tt.ranges)
			}
		})
	}
}
