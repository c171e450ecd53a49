package xds

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

func TestClaimRefused(t *testing.T) {
	tests := []struct {
		name  string
		node  *corev3.Node
		named bool
		want  string
	}{
		{"a first request claiming the certificate's farm is served", &corev3.Node{Cluster: "web/shop"}, false, ""},
		{"a later request naming no node is served once the stream is named", nil, true, ""},
		{"a first request claiming another farm is refused", &corev3.Node{Cluster: "web/blog"}, false, refusedOtherFarm},
		{"a later request claiming another farm is refused", &corev3.Node{Cluster: "web/blog"}, true, refusedOtherFarm},
		{"a farm of the same name in another namespace is another farm", &corev3.Node{Cluster: "evil/shop"}, false, refusedOtherFarm},
		{"a first request naming no node is refused", nil, false, refusedNoNode},
		{"a node without a cluster is refused", &corev3.Node{Id: "frontend-0"}, false, refusedOtherFarm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claimRefused("web/shop", tt.node, tt.named); got != tt.want {
				t.Errorf("claimRefused = %q, want %q", got, tt.want)
			}
		})
	}
}
