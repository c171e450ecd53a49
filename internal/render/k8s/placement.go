package k8s

import (
	"encoding/json"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"webfarm.dev/operator/internal/model"
)

// spreadKeys are the topology domains a workload's pods spread over when
// its placement has no spread constraints of its own: nodes, then zones.
var spreadKeys = []string{corev1.LabelHostname, corev1.LabelTopologyZone}

// place puts a workload's placement on its pod spec. Without constraints
// of its own the pods spread softly (ScheduleAnyway: a cluster of one node
// or one zone schedules them all) over nodes and zones, counted per
// rollout (pod-template-hash) so that an update's new pods spread by
// themselves rather than around the old ones. A constraint without a
// label selector counts the workload's own pods.
func place(pod *corev1ac.PodSpecApplyConfiguration, p model.Placement, own map[string]string) {
	if len(p.NodeSelector) > 0 {
		pod.WithNodeSelector(maps.Clone(p.NodeSelector))
	}
	for _, t := range p.Tolerations {
		pod.WithTolerations(toleration(t))
	}
	if p.Affinity != nil {
		pod.WithAffinity(applyConfig[corev1ac.AffinityApplyConfiguration](p.Affinity))
	}
	if p.PriorityClassName != "" {
		pod.WithPriorityClassName(p.PriorityClassName)
	}
	if len(p.TopologySpreadConstraints) == 0 {
		for _, key := range spreadKeys {
			pod.WithTopologySpreadConstraints(corev1ac.TopologySpreadConstraint().
				WithMaxSkew(1).WithTopologyKey(key).WithWhenUnsatisfiable(corev1.ScheduleAnyway).
				WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(maps.Clone(own))).
				WithMatchLabelKeys(appsv1.DefaultDeploymentUniqueLabelKey))
		}
		return
	}
	for _, c := range p.TopologySpreadConstraints {
		pod.WithTopologySpreadConstraints(spreadConstraint(c, own))
	}
}

// toleration states only the fields a toleration sets, as the API server
// keeps it: what the operator applies must read back the same.
func toleration(t corev1.Toleration) *corev1ac.TolerationApplyConfiguration {
	out := corev1ac.Toleration()
	if t.Key != "" {
		out.WithKey(t.Key)
	}
	if t.Operator != "" {
		out.WithOperator(t.Operator)
	}
	if t.Value != "" {
		out.WithValue(t.Value)
	}
	if t.Effect != "" {
		out.WithEffect(t.Effect)
	}
	if t.TolerationSeconds != nil {
		out.WithTolerationSeconds(*t.TolerationSeconds)
	}
	return out
}

// spreadConstraint is a placement's spread constraint; without a label
// selector it counts the workload's own pods.
func spreadConstraint(c corev1.TopologySpreadConstraint, own map[string]string) *corev1ac.TopologySpreadConstraintApplyConfiguration {
	out := corev1ac.TopologySpreadConstraint().
		WithMaxSkew(c.MaxSkew).WithTopologyKey(c.TopologyKey).WithWhenUnsatisfiable(c.WhenUnsatisfiable)
	if c.LabelSelector != nil {
		out.WithLabelSelector(applyConfig[metav1ac.LabelSelectorApplyConfiguration](c.LabelSelector))
	} else {
		out.WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(maps.Clone(own)))
	}
	if c.MinDomains != nil {
		out.WithMinDomains(*c.MinDomains)
	}
	if c.NodeAffinityPolicy != nil {
		out.WithNodeAffinityPolicy(*c.NodeAffinityPolicy)
	}
	if c.NodeTaintsPolicy != nil {
		out.WithNodeTaintsPolicy(*c.NodeTaintsPolicy)
	}
	if len(c.MatchLabelKeys) > 0 {
		out.WithMatchLabelKeys(c.MatchLabelKeys...)
	}
	return out
}

// applyConfig is the apply configuration of a Kubernetes API value: the two
// share their JSON form, and the value's empty fields stay unset. The
// values are the model's, of Kubernetes' own types, which always encode.
func applyConfig[T any](v any) *T {
	raw, err := json.Marshal(v)
	if err != nil {
		panic("encoding a Kubernetes API value: " + err.Error())
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		panic("decoding a Kubernetes API value as its apply configuration: " + err.Error())
	}
	return out
}
