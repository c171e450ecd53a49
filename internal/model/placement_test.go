package model_test

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
)

func farmWithService(s v1.FrontendService) *v1.WebFarm {
	return &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: v1.WebFarmSpec{
		Sites:    []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{{AppPool: "web"}}}},
		Frontend: v1.Frontend{Service: s},
	}}
}

func TestTheFrontendServiceKeepsTheClientsAddressUnlessToldOtherwise(t *testing.T) {
	tests := []struct {
		name    string
		service v1.FrontendService
		want    string
	}{
		{"a ClusterIP Service has no external traffic policy", v1.FrontendService{}, ""},
		{"a NodePort Service is Local by default", v1.FrontendService{Type: "NodePort"}, "Local"},
		{"a LoadBalancer Service is Local by default", v1.FrontendService{Type: "LoadBalancer"}, "Local"},
		{"a LoadBalancer Service may say Cluster", v1.FrontendService{Type: "LoadBalancer", ExternalTrafficPolicy: v1.ExternalTrafficCluster}, "Cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := model.ResolveFarm(farmWithService(tt.service), model.Platform{})
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Frontend.Service.ExternalTrafficPolicy; got != tt.want {
				t.Errorf("externalTrafficPolicy %q; want %q", got, tt.want)
			}
		})
	}
}

func TestSourceRangesAreMaskedSortedAndDistinct(t *testing.T) {
	f, err := model.ResolveFarm(farmWithService(v1.FrontendService{Type: "LoadBalancer",
		LoadBalancerSourceRanges: []v1.CIDR{"198.51.100.7/24", "192.0.2.0/24", "198.51.100.0/24"}}), model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24")}
	if got := f.Frontend.Service.LoadBalancerSourceRanges; !reflect.DeepEqual(got, want) {
		t.Errorf("source ranges %v; want %v", got, want)
	}
}

// The API server refuses each of these; the model refuses them again, for
// objects that reach it some other way.
func TestThePlacementsTheAPIRefusesTheModelRefusesToo(t *testing.T) {
	tests := []struct {
		name      string
		placement v1.Placement
		service   v1.FrontendService
		want      string
	}{
		{"a pod affinity term naming another namespace", v1.Placement{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, Namespaces: []string{"kube-system"}}}}}},
			v1.FrontendService{}, "namespaces and namespaceSelector are not allowed"},
		{"a preferred pod anti-affinity term with an empty namespace selector", v1.Placement{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, NamespaceSelector: &metav1.LabelSelector{}}}}}}},
			v1.FrontendService{}, "namespaces and namespaceSelector are not allowed"},
		{"a system priority class", v1.Placement{PriorityClassName: "system-node-critical"}, v1.FrontendService{}, "system priority classes"},
		{"a node selector key with a newline", v1.Placement{NodeSelector: map[string]v1.LabelValue{"zone\nx": "a"}}, v1.FrontendService{}, "nodeSelector key"},
		{"a toleration without a key that says Equal", v1.Placement{Tolerations: []v1.Toleration{{Operator: "Equal"}}}, v1.FrontendService{}, "needs operator Exists"},
		{"a spread constraint over an unknown policy", v1.Placement{TopologySpreadConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "Sometimes"}}}, v1.FrontendService{}, "DoNotSchedule or ScheduleAnyway"},
		{"an annotation key with a space", v1.Placement{}, v1.FrontendService{Type: "LoadBalancer", Annotations: map[string]string{"bad key": "x"}}, "annotations key"},
		{"a load balancer class on a ClusterIP Service", v1.Placement{}, v1.FrontendService{LoadBalancerClass: "example.com/lb"}, "need type LoadBalancer"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			f := farmWithService(tt.service)
			f.Spec.Frontend.Placement = tt.placement
			_, err := model.ResolveFarm(f, model.Platform{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want one containing %q", err, tt.want)
			}
			p := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: v1.AppPoolSpec{
				Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}, Placement: tt.placement}}
			if _, err := model.ResolvePool(p, model.Platform{}); tt.service.Type == "" && tt.service.LoadBalancerClass == "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("pool error %v; want one containing %q", err, tt.want)
			}
		})
	}
}
