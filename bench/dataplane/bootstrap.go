package main

import (
	"fmt"
	"os"
	"path/filepath"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// farmListener is the listener that carries the farm's traffic.
func farmListener(b *bootstrapv3.Bootstrap) (*listenerv3.Listener, error) {
	for _, l := range b.StaticResources.Listeners {
		if l.Name == envoy.ListenerName {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no listener %q in the bootstrap", envoy.ListenerName)
}

// poolClusters are the clusters of the farm's pools.
func poolClusters(b *bootstrapv3.Bootstrap) []*clusterv3.Cluster {
	var out []*clusterv3.Cluster
	for _, c := range b.StaticResources.Clusters {
		if c.Name == vocabulary.PoolCluster(poolName) {
			out = append(out, c)
		}
	}
	return out
}

// writeBootstrap writes an Envoy's own bootstrap to dir/envoy.json and
// gives the farm's Envoy arguments for it: the same worker count and
// options as the farm's frontend, another configuration.
func writeBootstrap(dir string, farm model.Farm, b *bootstrapv3.Bootstrap) ([]string, error) {
	conf, err := bootstrapJSON(b)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "envoy.json")
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		return nil, err
	}
	return renderedEnvoyArgs(farm, path)
}

// bootstrapJSON is the bootstrap as Envoy reads it, after Envoy's own
// validation rules.
func bootstrapJSON(b *bootstrapv3.Bootstrap) ([]byte, error) {
	if err := b.ValidateAll(); err != nil {
		return nil, fmt.Errorf("envoy bootstrap: %w", err)
	}
	return protojson.MarshalOptions{UseProtoNames: true, Multiline: true}.Marshal(b)
}
