package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"webfarm.dev/operator/internal/testutil"
)

// Placement and the frontend Service's load balancer settings, checked by
// the API server.

// A placementCase is a placement (flow style) that each kind taking one is
// given: refused with want at field below the placement, or accepted when
// want is empty.
//
//nolint:kubeapilinter // a test table's row, not an API type
type placementCase struct{ name, placement, field, want string }

// placementPaths are the kinds that take a placement, and where.
var placementPaths = map[string]string{"WebFarm": "spec.frontend.placement", "AppPool": "spec.placement", "CachePolicy": "spec.placement"}

// checkPlacements runs each placement case in each kind that takes one.
func checkPlacements(t *testing.T, cases []placementCase) {
	for _, kind := range []string{"WebFarm", "AppPool", "CachePolicy"} {
		var kindCases []manifestCase
		for _, c := range cases {
			name, patch := c.name+" ("+kind+")", `spec: {placement: `+c.placement+`}`
			if kind == "WebFarm" {
				patch = `spec: {frontend: {placement: ` + c.placement + `}}`
			}
			if c.want == "" {
				kindCases = append(kindCases, accepted(name, patch))
			} else {
				kindCases = append(kindCases, refused(name, patch, placementPaths[kind]+c.field, c.want))
			}
		}
		checkManifests(t, kind, kindCases)
	}
}

// service is a patch that gives the base WebFarm's frontend Service (flow style).
func service(settings string) string { return `spec: {frontend: {service: ` + settings + `}}` }

// manyPairs is a flow map of n pairs, made by format from their index.
func manyPairs(n int, format string) string { return "{" + repeated(n, format) + "}" }

func TestPlacementsThatAreRefused(t *testing.T) {
	checkPlacements(t, []placementCase{
		{"a pod affinity term naming other namespaces is refused", `{affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}, namespaces: [kube-system]}]}}}`,
			".affinity", "pod affinity terms select pods of the object's own namespace: namespaces and namespaceSelector are not allowed"},
		{"a preferred pod affinity term with an empty namespace selector (every namespace) is refused", `{affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 10, podAffinityTerm: {topologyKey: kubernetes.io/hostname, namespaceSelector: {}}}]}}}`,
			".affinity", "namespaces and namespaceSelector are not allowed"},
		{"a pod anti-affinity term with a namespace selector is refused", `{affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, namespaceSelector: {matchLabels: {team: other}}}]}}}`,
			".affinity", "pod anti-affinity terms select pods of the object's own namespace"},
		{"seventeen required pod anti-affinity terms are refused", `{affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [` + strings.Repeat(`{topologyKey: kubernetes.io/hostname}, `, 16) + `{topologyKey: kubernetes.io/hostname}]}}}`,
			".affinity", "at most 16 required and 16 preferred terms each"},
		{"a node selector key that is not a label key is refused", `{nodeSelector: {"bad key!": "x"}}`, ".nodeSelector", "nodeSelector keys must be label keys"},
		{"a node selector value with a newline is refused", `{nodeSelector: {zone: "a\nb"}}`, ".nodeSelector.zone", "should match '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'"},
		{"a node selector of 33 labels is refused", `{nodeSelector: ` + manyPairs(33, "k%d: v") + `}`, ".nodeSelector", "must have at most 32 items"},
		{"an empty node selector is refused", `{nodeSelector: {}}`, ".nodeSelector", "should have at least 1 properties"},
		{"a toleration with an unknown operator is refused", `{tolerations: [{key: edge, operator: Matches}]}`, ".tolerations[0].operator", `Unsupported value: "Matches": supported values: "Equal", "Exists"`},
		{"a toleration with an unknown effect is refused", `{tolerations: [{key: edge, operator: Exists, effect: Evict}]}`, ".tolerations[0].effect", `supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
		{"a toleration without a key that does not say Exists is refused", `{tolerations: [{operator: Equal, value: x}]}`, ".tolerations", "a toleration without a key needs operator Exists"},
		{"a toleration with operator Exists and a value is refused", `{tolerations: [{key: edge, operator: Exists, value: "true"}]}`, ".tolerations", "a toleration with operator Exists has no value"},
		{"a toleration key with a semicolon is refused", `{tolerations: [{key: "edge;rm", operator: Exists}]}`, ".tolerations[0].key", "must be a label key"},
		{"tolerationSeconds without effect NoExecute is refused", `{tolerations: [{key: edge, operator: Exists, effect: NoSchedule, tolerationSeconds: 60}]}`, ".tolerations", "tolerationSeconds needs effect NoExecute"},
		{"33 tolerations are refused", `{tolerations: [` + strings.Repeat(`{key: edge, operator: Exists}, `, 32) + `{key: edge, operator: Exists}]}`, ".tolerations", "must have at most 32 items"},
		{"a spread constraint with an unknown whenUnsatisfiable is refused", `{topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: Sometimes}]}`, ".topologySpreadConstraints[0].whenUnsatisfiable", `supported values: "DoNotSchedule", "ScheduleAnyway"`},
		{"a spread constraint with maxSkew 0 is refused", `{topologySpreadConstraints: [{maxSkew: 0, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}]}`, ".topologySpreadConstraints[0].maxSkew", "should be greater than or equal to 1"},
		{"a spread constraint whose topology key is not a label key is refused", `{topologySpreadConstraints: [{maxSkew: 1, topologyKey: "zone/of/nodes", whenUnsatisfiable: ScheduleAnyway}]}`, ".topologySpreadConstraints[0].topologyKey", "must be a label key"},
		{"minDomains with ScheduleAnyway is refused", `{topologySpreadConstraints: [{maxSkew: 1, minDomains: 3, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}`, ".topologySpreadConstraints", "minDomains needs whenUnsatisfiable DoNotSchedule"},
		{"nine spread constraints are refused", `{topologySpreadConstraints: [` + strings.Repeat(`{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}, `, 8) + `{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}]}`, ".topologySpreadConstraints", "must have at most 8 items"},
		{"the system-node-critical priority class is refused", `{priorityClassName: system-node-critical}`, ".priorityClassName", "may not name a system priority class"},
		{"the system-cluster-critical priority class is refused", `{priorityClassName: system-cluster-critical}`, ".priorityClassName", "may not name a system priority class"},
		{"a priority class name with capitals is refused", `{priorityClassName: High}`, ".priorityClassName", "should match"},
	})
}

func TestFrontendServicesThatAreRefused(t *testing.T) {
	var cases []manifestCase
	for _, c := range []struct{ name, settings, want string }{
		{"externalTrafficPolicy on a ClusterIP Service is refused", `{externalTrafficPolicy: Cluster}`, "externalTrafficPolicy needs type NodePort or LoadBalancer"},
		{"an unknown externalTrafficPolicy is refused", `{type: LoadBalancer, externalTrafficPolicy: Global}`, `supported values: "Cluster", "Local"`},
		{"a loadBalancerClass on a NodePort Service is refused", `{type: NodePort, loadBalancerClass: service.k8s.aws/nlb}`, "loadBalancerClass needs type LoadBalancer"},
		{"a loadBalancerClass that is not a label-style name is refused", `{type: LoadBalancer, loadBalancerClass: "nlb please"}`, "loadBalancerClass: Invalid value: \"nlb please\": must be a label key"},
		{"an annotation key that is not a qualified name is refused", `{type: LoadBalancer, annotations: {"bad key": "x"}}`, "annotation keys must be qualified names"},
		{"an annotation key with two slashes is refused", `{type: LoadBalancer, annotations: {"a/b/c": "x"}}`, "annotation keys must be qualified names"},
		{"an annotation value over 4096 characters is refused", `{type: LoadBalancer, annotations: {example.com/big: "` + strings.Repeat("v", 4097) + `"}}`, "annotation values may be at most 4096 characters"},
		{"65 annotations are refused", `{type: LoadBalancer, annotations: ` + manyPairs(65, "example.com/a%d: v") + `}`, "must have at most 64 items"},
		{"a source range that is not a CIDR is refused", `{type: LoadBalancer, loadBalancerSourceRanges: [10.0.0.1]}`, "must be a CIDR such as 10.0.0.0/8"},
		{"source ranges on a NodePort Service are refused", `{type: NodePort, loadBalancerSourceRanges: [10.0.0.0/8]}`, "loadBalancerSourceRanges needs type LoadBalancer"},
	} {
		cases = append(cases, refused(c.name, service(c.settings), "spec.frontend.service", c.want))
	}
	checkManifests(t, "WebFarm", cases)
}

func TestPlacementsAndServicesThatAreAccepted(t *testing.T) {
	checkPlacements(t, []placementCase{
		{name: "a node selector, tolerations and a priority class are accepted", placement: `{nodeSelector: {node-role.example.com/edge: "true", kubernetes.io/arch: amd64}, tolerations: [{key: node-role.example.com/edge, operator: Exists, effect: NoSchedule}, {operator: Exists, effect: NoExecute, tolerationSeconds: 30}], priorityClassName: web-critical}`},
		{name: "a required node affinity and a preferred pod anti-affinity are accepted", placement: `{affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [eu-west-1a, eu-west-1b]}]}]}}, podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/instance: web}}}}]}}}`},
		{name: "a zone spread constraint with minDomains is accepted", placement: `{topologySpreadConstraints: [{maxSkew: 1, minDomains: 3, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [pod-template-hash], nodeTaintsPolicy: Honor}]}`},
		{name: "a node selector of 32 labels is accepted", placement: `{nodeSelector: ` + manyPairs(32, "example.com/k%d: v") + `}`},
	})
	checkManifests(t, "WebFarm", []manifestCase{
		accepted("a cloud load balancer with a class, a Local traffic policy, annotations and source ranges is accepted", service(`{type: LoadBalancer, loadBalancerClass: service.k8s.aws/nlb, externalTrafficPolicy: Local, annotations: {service.beta.kubernetes.io/aws-load-balancer-scheme: internet-facing, service.beta.kubernetes.io/aws-load-balancer-nlb-target-type: ip}, loadBalancerSourceRanges: [192.0.2.0/24, "2001:db8::/32"]}`)),
		accepted("a NodePort Service with externalTrafficPolicy Cluster is accepted", service(`{type: NodePort, externalTrafficPolicy: Cluster}`)),
		accepted("a load balancer with 64 annotations is accepted", service(`{type: LoadBalancer, annotations: `+manyPairs(64, "example.com/a%d: v")+`}`)),
	})
}

func TestALoadBalancersClassStaysWhileTheServiceIsALoadBalancer(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	obj := patched(t, "WebFarm", service(`{type: LoadBalancer, loadBalancerClass: service.k8s.aws/nlb}`))
	if err := testutil.CreateStrict(k8s, ns, obj); err != nil {
		t.Fatal(err)
	}
	defer remove(t, obj)
	change := func(class any, serviceType string) error {
		next := obj.DeepCopy()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(next), next); err != nil {
			t.Fatal(err)
		}
		service := map[string]any{"type": serviceType}
		if class != nil {
			service["loadBalancerClass"] = class
		}
		if err := unstructured.SetNestedField(next.Object, service, "spec", "frontend", "service"); err != nil {
			t.Fatal(err)
		}
		return k8s.Update(ctx, next)
	}
	for _, class := range []any{"example.com/other", nil} {
		err := change(class, "LoadBalancer")
		if err == nil {
			t.Fatalf("changing the class to %v was accepted", class)
		}
		checkRefusal(t, err, "spec.frontend.service", "loadBalancerClass cannot change while the type stays LoadBalancer")
	}
	if err := change(nil, "ClusterIP"); err != nil {
		t.Fatalf("turning the Service into ClusterIP, without a class, was refused: %v", err)
	}
	if err := change("example.com/other", "LoadBalancer"); err != nil {
		t.Fatalf("a LoadBalancer again, with another class, was refused: %v", err)
	}
}

// The user guide's farm behind a cloud load balancer is a manifest the API
// server takes as written.
func TestTheUserGuidesLoadBalancerExampleIsAccepted(t *testing.T) {
	ns := newNamespace(t)
	guide, err := os.ReadFile("../../docs/user-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, found := strings.Cut(string(guide), "## Placement and cloud load balancers")
	_, block, inBlock := strings.Cut(section, "```yaml\n")
	example, _, closed := strings.Cut(block, "```")
	if !found || !inBlock || !closed {
		t.Fatal("the user guide has no YAML example under \"Placement and cloud load balancers\"")
	}
	docs := strings.Split(example, "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("the example has %d manifests; want the farm and its pool", len(docs))
	}
	for _, doc := range docs {
		obj, err := apply(t, ns, doc)
		if err != nil {
			t.Fatalf("the API server refused the user guide's example: %v\n%s", err, doc)
		}
		remove(t, obj)
	}
}
