package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placement says where a workload's pods run: the nodes they may use, the
// taints they tolerate, how they spread over nodes and zones, and their
// priority against other pods. Its fields are those of a pod, bounded, and
// scoped to the object's namespace: pod affinity terms may not name other
// namespaces, so they and the spread constraints count only pods of the
// object's own namespace.
//
// Unset topologySpreadConstraints spread the pods softly (ScheduleAnyway,
// maxSkew 1) over nodes (kubernetes.io/hostname) and zones
// (topology.kubernetes.io/zone); a cluster of one node or one zone still
// schedules every pod.
type Placement struct {
	// nodeSelector runs the pods only on nodes that have every one of these
	// labels, with these values.
	//
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (k.indexOf('/') < 0 || k.indexOf('/') <= 253))",message="nodeSelector keys must be label keys: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'"
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// tolerations let the pods run on nodes with matching taints (nodes
	// set aside for them, such as edge nodes for the frontends).
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(t, has(t.key) || t.operator == 'Exists')",message="a toleration without a key needs operator Exists"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.operator != 'Exists' || !has(t.value))",message="a toleration with operator Exists has no value"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.tolerationSeconds) || (has(t.effect) && t.effect == 'NoExecute'))",message="tolerationSeconds needs effect NoExecute"
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// affinity is the pods' node affinity, pod affinity and pod
	// anti-affinity. A pod affinity or anti-affinity term selects pods of
	// the object's own namespace: it may not set namespaces or
	// namespaceSelector.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.podAffinity) || ((!has(self.podAffinity.requiredDuringSchedulingIgnoredDuringExecution) || self.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.all(t, !has(t.namespaces) && !has(t.namespaceSelector))) && (!has(self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(w, !has(w.podAffinityTerm.namespaces) && !has(w.podAffinityTerm.namespaceSelector))))",message="pod affinity terms select pods of the object's own namespace: namespaces and namespaceSelector are not allowed"
	// +kubebuilder:validation:XValidation:rule="!has(self.podAntiAffinity) || ((!has(self.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution) || self.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution.all(t, !has(t.namespaces) && !has(t.namespaceSelector))) && (!has(self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(w, !has(w.podAffinityTerm.namespaces) && !has(w.podAffinityTerm.namespaceSelector))))",message="pod anti-affinity terms select pods of the object's own namespace: namespaces and namespaceSelector are not allowed"
	// +kubebuilder:validation:XValidation:rule="!has(self.nodeAffinity) || ((!has(self.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) || size(self.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms) <= 16) && (!has(self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) || size(self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) <= 16))",message="node affinity may have at most 16 required and 16 preferred terms"
	// +kubebuilder:validation:XValidation:rule="(!has(self.podAffinity) || ((!has(self.podAffinity.requiredDuringSchedulingIgnoredDuringExecution) || size(self.podAffinity.requiredDuringSchedulingIgnoredDuringExecution) <= 16) && (!has(self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) || size(self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) <= 16))) && (!has(self.podAntiAffinity) || ((!has(self.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution) || size(self.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution) <= 16) && (!has(self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) || size(self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) <= 16)))",message="pod affinity and anti-affinity may have at most 16 required and 16 preferred terms each"
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints spread the pods over topology domains
	// (nodes, zones). A constraint without a labelSelector counts the
	// workload's own pods. Unset, the pods spread softly over nodes and
	// zones (see Placement). Each pair of topologyKey and
	// whenUnsatisfiable appears once.
	//
	// +optional
	// +listType=map
	// +listMapKey=topologyKey
	// +listMapKey=whenUnsatisfiable
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	TopologySpreadConstraints []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// priorityClassName names the PriorityClass of the pods, which orders
	// them against other pods when nodes are full. The system classes
	// (system-node-critical, system-cluster-critical) are for the
	// cluster's own components and are refused.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('system-')",message="priorityClassName may not name a system priority class (system-node-critical, system-cluster-critical): they are for the cluster's own components"
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ExternalTrafficPolicy is how a NodePort or LoadBalancer Service routes
// traffic that reaches a node.
//
// +kubebuilder:validation:Enum=Cluster;Local
type ExternalTrafficPolicy string

const (
	// ExternalTrafficLocal keeps the client's address: a node passes
	// traffic only to frontends on itself.
	ExternalTrafficLocal ExternalTrafficPolicy = "Local"
	// ExternalTrafficCluster lets any node pass traffic to any frontend,
	// replacing the client's address with the node's.
	ExternalTrafficCluster ExternalTrafficPolicy = "Cluster"
)

// LabelKey is a label key: an optional DNS subdomain prefix and "/", then
// at most 63 letters, digits, '-', '_' or '.' that start and end with a
// letter or digit ("topology.kubernetes.io/zone").
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=317
// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (self.indexOf('/') < 0 || self.indexOf('/') <= 253)",message="must be a label key: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'"
type LabelKey string

// LabelValue is a label value: at most 63 letters, digits, '-', '_' or '.'
// that start and end with a letter or digit, or empty.
//
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// Toleration lets pods run on nodes with a matching taint.
type Toleration struct {
	// key is the taint's key; unset with operator Exists, the toleration
	// matches every taint.
	//
	// +optional
	Key LabelKey `json:"key,omitempty"`

	// operator is Equal (the taint's value must be value) or Exists (any
	// value).
	//
	// +required
	// +kubebuilder:validation:Enum=Equal;Exists
	Operator string `json:"operator,omitempty"`

	// value is the taint's value, for operator Equal.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	Value LabelValue `json:"value,omitempty"`

	// effect is the taint effect matched (NoSchedule, PreferNoSchedule or
	// NoExecute); unset, every effect.
	//
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect string `json:"effect,omitempty"`

	// tolerationSeconds is how long a pod stays on a node after a matching
	// NoExecute taint appears; unset, for good.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31536000
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// TopologySpreadConstraint spreads pods over topology domains (Kubernetes'
// pod topology spread constraint, counted in the object's own namespace).
//
// +kubebuilder:validation:XValidation:rule="!has(self.minDomains) || self.whenUnsatisfiable == 'DoNotSchedule'",message="minDomains needs whenUnsatisfiable DoNotSchedule"
type TopologySpreadConstraint struct {
	// maxSkew is how many more pods one domain may have than the emptiest.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MaxSkew int32 `json:"maxSkew,omitempty"`

	// topologyKey is the node label whose values are the domains
	// ("topology.kubernetes.io/zone").
	//
	// +required
	TopologyKey LabelKey `json:"topologyKey,omitempty"`

	// whenUnsatisfiable is DoNotSchedule (a pod waits rather than skew the
	// spread) or ScheduleAnyway (the scheduler only prefers less skew).
	//
	// +required
	// +kubebuilder:validation:Enum=DoNotSchedule;ScheduleAnyway
	WhenUnsatisfiable string `json:"whenUnsatisfiable,omitempty"`

	// labelSelector selects the pods counted, within the object's
	// namespace; unset, the workload's own pods.
	//
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`

	// minDomains is the least number of domains counted, with
	// DoNotSchedule.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	MinDomains int32 `json:"minDomains,omitempty"`

	// nodeAffinityPolicy is Honor (count only nodes the pods' node
	// selector and affinity admit, the default) or Ignore.
	//
	// +optional
	// +kubebuilder:validation:Enum=Honor;Ignore
	NodeAffinityPolicy string `json:"nodeAffinityPolicy,omitempty"`

	// nodeTaintsPolicy is Honor (count only nodes whose taints the pods
	// tolerate) or Ignore (the default).
	//
	// +optional
	// +kubebuilder:validation:Enum=Honor;Ignore
	NodeTaintsPolicy string `json:"nodeTaintsPolicy,omitempty"`

	// matchLabelKeys are pod label keys whose values, taken from each new
	// pod, narrow the pods counted ("pod-template-hash" counts one
	// rollout's pods).
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	MatchLabelKeys []LabelKey `json:"matchLabelKeys,omitempty"`
}
