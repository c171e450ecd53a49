package hostile_test

import (
	"fmt"
	"strings"
	"testing"

	k8srender "webfarm.dev/operator/internal/render/k8s"
)

// Placement and the frontend Service's load balancer settings: nothing in
// them reaches another namespace's pods, a config file, or Kubernetes
// unchecked.

// farmPlaced is a farm of one plain site whose frontend has the placement given (flow style).
func farmPlaced(placement string) string { return farmWithFrontend(`{placement: ` + placement + `}`) }

// farmService is a farm of one plain site whose frontend Service is given (flow style).
func farmService(service string) string { return farmWithFrontend(`{service: ` + service + `}`) }

// flowMap is n entries of the format (given the index), in flow style.
func flowMap(n int, format string) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf(format, i)
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

func placementCases() []hostileCase {
	const ownNamespaceOnly = "namespaces and namespaceSelector are not allowed"
	var spreads string
	for i := range 7 {
		spreads += fmt.Sprintf(`{maxSkew: 1, topologyKey: example.com/domain-%d, whenUnsatisfiable: DoNotSchedule, minDomains: 2, nodeAffinityPolicy: Honor, nodeTaintsPolicy: Ignore, matchLabelKeys: [pod-template-hash]}, `, i)
	}
	return []hostileCase{
		{
			name:      "a frontend's pod affinity naming kube-system is refused",
			manifests: []string{farmPlaced(`{affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {k8s-app: kube-dns}}, namespaces: [kube-system]}]}}}`)},
			refused:   []string{"spec.frontend.placement.affinity", ownNamespaceOnly},
		},
		{
			name:      "a pool's pod anti-affinity with an empty namespace selector, which selects every namespace, is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, placement: {affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname, namespaceSelector: {}}}]}}}}`)},
			refused:   []string{"spec.placement.affinity", ownNamespaceOnly},
		},
		{
			name:      "a cache tier's node selector of 1000 labels is refused",
			manifests: []string{cachePolicy(`{placement: {nodeSelector: ` + flowMap(1000, "example.com/k%d: v") + `}}`)},
			refused:   []string{"spec.placement.nodeSelector", "must have at most 32 items"},
		},
		{
			name:      "a node selector value with Envoy JSON is refused",
			manifests: []string{farmPlaced(`{nodeSelector: {zone: ` + q(envoyInjection) + `}}`)},
			refused:   []string{"spec.frontend.placement.nodeSelector.zone: Too long: may not be more than 63 bytes"},
		},
		{
			name:      "two spread constraints over the same topology key and policy, which Kubernetes would refuse, are refused",
			manifests: []string{cachePolicy(`{placement: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}]}}`)},
			refused:   []string{"spec.placement.topologySpreadConstraints[1]: Duplicate value"},
		},
		{
			name:      "a node selector key with a newline and an nginx directive is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, placement: {nodeSelector: {` + q("zone\ninclude /etc/passwd;") + `: a}}}`)},
			refused:   []string{"spec.placement.nodeSelector", "nodeSelector keys must be label keys"},
		},
		{
			name:      "a toleration key with nginx syntax is refused",
			manifests: []string{cachePolicy(`{placement: {tolerations: [{key: ` + q(injection) + `, operator: Exists}]}}`)},
			refused:   []string{"spec.placement.tolerations[0].key: Invalid value", "must be a label key"},
		},
		{
			name:      "the system-cluster-critical priority class is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, placement: {priorityClassName: system-cluster-critical}}`)},
			refused:   []string{"spec.placement.priorityClassName", "may not name a system priority class"},
		},
		{
			name:      "a spread constraint over a topology key with a NUL byte is refused",
			manifests: []string{farmPlaced(`{topologySpreadConstraints: [{maxSkew: 1, topologyKey: ` + q("zone\x00x") + `, whenUnsatisfiable: DoNotSchedule}]}`)},
			refused:   []string{"spec.frontend.placement.topologySpreadConstraints[0].topologyKey: Invalid value", "must be a label key"},
		},
		{
			name:      "a Service annotation key that is not a qualified name is refused",
			manifests: []string{farmService(`{type: LoadBalancer, annotations: {"aws load balancer": internal}}`)},
			refused:   []string{"spec.frontend.service.annotations", "annotation keys must be qualified names"},
		},
		{
			name:      "a Service annotation key with a newline is refused",
			manifests: []string{farmService(`{type: LoadBalancer, annotations: {` + q("example.com/a\nX-Injected: 1") + `: x}}`)},
			refused:   []string{"spec.frontend.service.annotations", "annotation keys must be qualified names"},
		},
		{
			name:      "200 Service annotations are refused",
			manifests: []string{farmService(`{type: LoadBalancer, annotations: ` + flowMap(200, "example.com/a%d: v") + `}`)},
			refused:   []string{"spec.frontend.service.annotations", "must have at most 64 items"},
		},
		{
			name:      "a load balancer source range that is not a CIDR is refused",
			manifests: []string{farmService(`{type: LoadBalancer, loadBalancerSourceRanges: ["10.0.0.0/8\n0.0.0.0/0"]}`)},
			refused:   []string{"spec.frontend.service.loadBalancerSourceRanges[0]", "must be a CIDR such as 10.0.0.0/8"},
		},
		{
			name:      "a load balancer class with a newline is refused",
			manifests: []string{farmService(`{type: LoadBalancer, loadBalancerClass: ` + q("service.k8s.aws/nlb\nx") + `}`)},
			refused:   []string{"spec.frontend.service.loadBalancerClass: Invalid value", "must be a label key"},
		},
		{
			name:      "source ranges on a ClusterIP Service are refused",
			manifests: []string{farmService(`{loadBalancerSourceRanges: [10.0.0.0/8]}`)},
			refused:   []string{"loadBalancerSourceRanges needs type LoadBalancer"},
		},
		{
			name: "a farm behind a cloud load balancer with every setting at its bound is applied, its annotations only on the Service",
			manifests: []string{webPool, farmWithFrontend(`{service: {type: LoadBalancer, loadBalancerClass: service.k8s.aws/nlb, externalTrafficPolicy: Local,
				annotations: ` + flowMap(63, "example.com/a%d: v") + `, loadBalancerSourceRanges: ` + cidrList(64) + `},
				placement: {nodeSelector: ` + flowMap(32, "example.com/k%d: v") + `, tolerations: [{key: node-role.example.com/edge, operator: Exists, effect: NoSchedule}],
				priorityClassName: web-critical}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				svc := k8srender.Frontend(r.farms["farm"], nil).Service
				if *svc.Spec.LoadBalancerClass != "service.k8s.aws/nlb" || len(svc.Annotations) != 63 || len(svc.Spec.LoadBalancerSourceRanges) != 64 {
					t.Errorf("the Service has class %v, %d annotations, %d source ranges; want the manifest's", svc.Spec.LoadBalancerClass, len(svc.Annotations), len(svc.Spec.LoadBalancerSourceRanges))
				}
			},
		},
		{
			name:      "Service annotation values with nginx and Envoy syntax are applied and reach no config",
			manifests: []string{webPool, farmService(`{type: LoadBalancer, annotations: {example.com/nginx: ` + q(injection) + `, example.com/envoy: ` + q(envoyInjection) + `}}`)},
			absent:    []string{injection, envoyInjection},
			newFields: true,
		},
		{
			name: "a pool with 32 tolerations, 8 spread constraints and every kind of affinity is applied",
			manifests: []string{pool(`{content: {configMap: {name: site}}, placement: {
				tolerations: [` + strings.Repeat(`{key: example.com/t, operator: Equal, value: v, effect: NoExecute, tolerationSeconds: 60}, `, 31) + `{operator: Exists}],
				topologySpreadConstraints: [` + spreads + `{maxSkew: 3, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {tier: web}}}],
				affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}]}},
				  podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: cache}}}}]},
				  podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/instance: web}}}]}}}}`)},
			newFields: true,
			check: func(t *testing.T, _ string, r *rendered) {
				pod := r.poolObjs["web"].Deployment.Spec.Template.Spec
				if len(pod.Tolerations) != 32 || len(pod.TopologySpreadConstraints) != 8 || pod.Affinity.PodAntiAffinity == nil {
					t.Errorf("the workers have %d tolerations, %d spread constraints, affinity %+v; want the manifest's", len(pod.Tolerations), len(pod.TopologySpreadConstraints), pod.Affinity)
				}
			},
		},
	}
}
