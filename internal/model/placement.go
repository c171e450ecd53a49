package model

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// resolvePlacement checks a placement again (the API server checks it too):
// label keys and values, enums, a priority class that is not the system's,
// and pod affinity terms that stay in the object's namespace.
func resolvePlacement(field string, p v1.Placement, errs *errList) Placement {
	out := Placement{PriorityClassName: p.PriorityClassName}
	for _, k := range slices.Sorted(maps.Keys(p.NodeSelector)) {
		v := string(p.NodeSelector[k])
		errs.qualifiedName(field+".nodeSelector key", k)
		errs.labelValue(fmt.Sprintf("%s.nodeSelector[%q]", field, k), v)
		if out.NodeSelector == nil {
			out.NodeSelector = map[string]string{}
		}
		out.NodeSelector[k] = v
	}
	for i, t := range p.Tolerations {
		at := fmt.Sprintf("%s.tolerations[%d]", field, i)
		tol := corev1.Toleration{Key: string(t.Key), Operator: corev1.TolerationOperator(t.Operator), Value: string(t.Value),
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds}
		if tol.Key != "" {
			errs.qualifiedName(at+".key", tol.Key)
		} else if tol.Operator != corev1.TolerationOpExists {
			errs.add(at + ": a toleration without a key needs operator Exists")
		}
		if !slices.Contains([]corev1.TolerationOperator{"", corev1.TolerationOpEqual, corev1.TolerationOpExists}, tol.Operator) {
			errs.add(fmt.Sprintf("%s.operator %q: Equal or Exists", at, tol.Operator))
		}
		if !slices.Contains([]corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}, tol.Effect) {
			errs.add(fmt.Sprintf("%s.effect %q: NoSchedule, PreferNoSchedule or NoExecute", at, tol.Effect))
		}
		errs.labelValue(at+".value", tol.Value)
		out.Tolerations = append(out.Tolerations, tol)
	}
	if a := p.Affinity; a != nil {
		for _, terms := range [][]corev1.PodAffinityTerm{podAffinityTerms(a.PodAffinity), podAntiAffinityTerms(a.PodAntiAffinity)} {
			for _, t := range terms {
				if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
					errs.add(field + ".affinity: pod affinity terms select pods of the object's own namespace: namespaces and namespaceSelector are not allowed")
				}
			}
		}
		out.Affinity = a.DeepCopy()
	}
	for i, c := range p.TopologySpreadConstraints {
		at := fmt.Sprintf("%s.topologySpreadConstraints[%d]", field, i)
		spread := corev1.TopologySpreadConstraint{MaxSkew: c.MaxSkew, TopologyKey: string(c.TopologyKey),
			WhenUnsatisfiable: corev1.UnsatisfiableConstraintAction(c.WhenUnsatisfiable), LabelSelector: c.LabelSelector.DeepCopy()}
		errs.qualifiedName(at+".topologyKey", spread.TopologyKey)
		if c.MaxSkew < 1 {
			errs.add(fmt.Sprintf("%s.maxSkew %d: at least 1", at, c.MaxSkew))
		}
		if !slices.Contains([]corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}, spread.WhenUnsatisfiable) {
			errs.add(fmt.Sprintf("%s.whenUnsatisfiable %q: DoNotSchedule or ScheduleAnyway", at, spread.WhenUnsatisfiable))
		}
		if c.MinDomains != 0 {
			spread.MinDomains = &c.MinDomains
		}
		for _, policy := range []*string{&c.NodeAffinityPolicy, &c.NodeTaintsPolicy} {
			if !slices.Contains([]string{"", "Honor", "Ignore"}, *policy) {
				errs.add(fmt.Sprintf("%s: node policy %q: Honor or Ignore", at, *policy))
			}
		}
		if c.NodeAffinityPolicy != "" {
			spread.NodeAffinityPolicy = (*corev1.NodeInclusionPolicy)(&c.NodeAffinityPolicy)
		}
		if c.NodeTaintsPolicy != "" {
			spread.NodeTaintsPolicy = (*corev1.NodeInclusionPolicy)(&c.NodeTaintsPolicy)
		}
		for _, k := range c.MatchLabelKeys {
			errs.qualifiedName(at+".matchLabelKeys", string(k))
			spread.MatchLabelKeys = append(spread.MatchLabelKeys, string(k))
		}
		out.TopologySpreadConstraints = append(out.TopologySpreadConstraints, spread)
	}
	if n := p.PriorityClassName; n != "" {
		if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
			errs.add(fmt.Sprintf("%s.priorityClassName %q: %s", field, n, strings.Join(msgs, ", ")))
		}
		if strings.HasPrefix(n, "system-") {
			errs.add(fmt.Sprintf("%s.priorityClassName %q: system priority classes are for the cluster's own components", field, n))
		}
	}
	return out
}

func podAffinityTerms(a *corev1.PodAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return weightedTerms(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution)
}

func podAntiAffinityTerms(a *corev1.PodAntiAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return weightedTerms(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution)
}

func weightedTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) []corev1.PodAffinityTerm {
	terms := slices.Clone(required)
	for _, w := range preferred {
		terms = append(terms, w.PodAffinityTerm)
	}
	return terms
}

// resolveServiceExposure checks the frontend Service's outside settings
// again. ExternalTrafficPolicy is Local unless set, for NodePort and
// LoadBalancer Services: ClientIP and ClassC affinity need the client's
// address, which Cluster replaces with a node's.
func resolveServiceExposure(s v1.FrontendService, serviceType string, errs *errList) ServiceExposure {
	out := ServiceExposure{LoadBalancerClass: string(s.LoadBalancerClass)}
	if serviceType != "ClusterIP" {
		out.ExternalTrafficPolicy = orDefault(string(s.ExternalTrafficPolicy), string(v1.ExternalTrafficLocal))
	}
	if !slices.Contains([]string{"", "Local", "Cluster"}, out.ExternalTrafficPolicy) {
		errs.add(fmt.Sprintf("frontend.service.externalTrafficPolicy %q: Local or Cluster", out.ExternalTrafficPolicy))
	}
	if out.LoadBalancerClass != "" {
		errs.qualifiedName("frontend.service.loadBalancerClass", out.LoadBalancerClass)
	}
	if len(s.Annotations) > 0 {
		out.Annotations = maps.Clone(s.Annotations)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Annotations)) {
		errs.qualifiedName("frontend.service.annotations key", k)
	}
	for _, r := range s.LoadBalancerSourceRanges {
		prefix, err := netip.ParsePrefix(string(r))
		if err != nil {
			errs.add(fmt.Sprintf("frontend.service.loadBalancerSourceRanges: %q is not a CIDR", r))
			continue
		}
		out.LoadBalancerSourceRanges = append(out.LoadBalancerSourceRanges, prefix.Masked())
	}
	slices.SortFunc(out.LoadBalancerSourceRanges, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	out.LoadBalancerSourceRanges = slices.Compact(out.LoadBalancerSourceRanges)
	if (out.LoadBalancerClass != "" || len(out.LoadBalancerSourceRanges) > 0) && serviceType != "LoadBalancer" {
		errs.add("frontend.service: loadBalancerClass and loadBalancerSourceRanges need type LoadBalancer")
	}
	return out
}

// qualifiedName refuses what Kubernetes would not take as a label key or
// an annotation key.
func (e *errList) qualifiedName(field, name string) {
	if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
		e.add(fmt.Sprintf("%s %q: %s", field, name, strings.Join(msgs, ", ")))
	}
}

func (e *errList) labelValue(field, value string) {
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		e.add(fmt.Sprintf("%s %q: %s", field, value, strings.Join(msgs, ", ")))
	}
}
