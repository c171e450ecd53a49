package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"webfarm.dev/operator/internal/vocabulary"
)

func TestOnlyANodesClockLabelReweighsTheFarms(t *testing.T) {
	node := func(labels map[string]string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	slow := map[string]string{vocabulary.NodeMHzLabel: "550", "zone": "a"}
	for _, tt := range []struct {
		name     string
		old, new *corev1.Node // old nil: a creation
		passes   bool
	}{
		{"a node created with a clock rate passes", nil, node(slow, corev1.ConditionTrue), true},
		{"a node created without one passes nothing: its workers count at the default already", nil, node(nil, corev1.ConditionTrue), false},
		{"a new clock rate passes", node(slow, corev1.ConditionTrue), node(map[string]string{vocabulary.NodeMHzLabel: "900", "zone": "a"}, corev1.ConditionTrue), true},
		{"a clock rate added passes", node(nil, corev1.ConditionTrue), node(slow, corev1.ConditionTrue), true},
		{"a clock rate removed passes", node(slow, corev1.ConditionTrue), node(map[string]string{"zone": "a"}, corev1.ConditionTrue), true},
		{"a status report passes nothing", node(slow, corev1.ConditionTrue), node(slow, corev1.ConditionFalse), false},
		{"another label's change passes nothing", node(slow, corev1.ConditionTrue), node(map[string]string{vocabulary.NodeMHzLabel: "550", "zone": "b"}, corev1.ConditionTrue), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got bool
			if tt.old == nil {
				got = nodeClockFilter.Create(event.CreateEvent{Object: tt.new})
			} else {
				got = nodeClockFilter.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new})
			}
			if got != tt.passes {
				t.Errorf("passes %v, want %v", got, tt.passes)
			}
		})
	}
	if nodeClockFilter.Delete(event.DeleteEvent{Object: node(slow, corev1.ConditionTrue)}) {
		t.Error("a deleted node passes: its workers leave the EndpointSlices by themselves")
	}
}

func TestAPoolsEndpointSliceIsIndexedByTheNodesOfItsEndpoints(t *testing.T) {
	on := func(node string) discoveryv1.Endpoint {
		if node == "" {
			return discoveryv1.Endpoint{Addresses: []string{"10.0.0.9"}}
		}
		return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, NodeName: &node}
	}
	slice := func(component string, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{vocabulary.LabelComponent: component}}, Endpoints: endpoints}
	}
	for _, tt := range []struct {
		name  string
		slice *discoveryv1.EndpointSlice
		want  []string
	}{
		{"a pool's slice names each node once, sorted", slice(vocabulary.ComponentPool, on("b"), on("a"), on("b")), []string{"a", "b"}},
		{"an endpoint without a node names none", slice(vocabulary.ComponentPool, on(""), on("a")), []string{"a"}},
		{"a cache tier's slice names no node: its endpoints are not weighed", slice(vocabulary.ComponentCache, on("a")), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := slicePoolNodes(tt.slice); !slices.Equal(got, tt.want) {
				t.Errorf("nodes %v, want %v", got, tt.want)
			}
		})
	}
}
