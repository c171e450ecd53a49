package endpoints

import (
	"math"
	"slices"
	"testing"

	"webfarm.dev/operator/internal/vocabulary"
)

func TestClockWeights(t *testing.T) {
	for _, tt := range []struct {
		name string
		mhz  []float64
		want []uint32
	}{
		{"workers on equal nodes keep equal shares, without weights", []float64{2000, 2000, 2000}, nil},
		{"a single worker needs no weight", []float64{550}, nil},
		{"a 550 and a 900 MHz node weigh 11 to 18, their clocks in lowest terms", []float64{550, 900}, []uint32{11, 18}},
		{"workers on the same node weigh the same", []float64{900, 550, 900}, []uint32{18, 11, 18}},
		{"fractions of a MHz round to whole MHz", []float64{549.6, 900.2}, []uint32{11, 18}},
		{"a clock below 1 MHz counts as 1 MHz, never as a zero weight", []float64{0.2, 3}, []uint32{1, 3}},
		{"a clock beyond Envoy's limit is capped, and the weights' sum stays within it", []float64{1e300, 1},
			[]uint32{math.MaxUint32 - 3, 1}},
		{"coprime clocks whose sum exceeds the limit scale down into it", []float64{4294967291, 4294967279},
			[]uint32{2147483649, 2147483643}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ClockWeights(tt.mhz)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ClockWeights(%v) = %v, want %v", tt.mhz, got, tt.want)
			}
			var sum uint64
			for _, w := range got {
				if w == 0 {
					t.Errorf("weight 0 in %v: Envoy wants at least 1", got)
				}
				sum += uint64(w)
			}
			if sum > math.MaxUint32 {
				t.Errorf("weights %v sum to %d, beyond Envoy's %d", got, sum, uint64(math.MaxUint32))
			}
		})
	}
}

func TestWeightedByClock(t *testing.T) {
	b := Backends{
		vocabulary.PoolCluster("www"): {
			{Address: "10.0.0.1", Port: 8080, Node: "slow"},
			{Address: "10.0.0.2", Port: 8080, Node: "fast"},
			{Address: "10.0.0.3", Port: 8080, Node: "unlabelled"},
			{Address: "10.0.0.4", Port: 8080},
		},
		vocabulary.PoolCluster("same"):    {{Address: "10.0.1.1", Port: 8080, Node: "slow"}, {Address: "10.0.1.2", Port: 8080, Node: "slow"}},
		vocabulary.CacheCluster("static"): {{Address: "10.0.2.1", Port: 8080, Node: "slow"}, {Address: "10.0.2.2", Port: 8080, Node: "fast"}},
	}
	clocks := Clocks{ByNode: map[string]float64{"slow": 550, "fast": 900}, Default: 2000}
	pools := []string{vocabulary.PoolCluster("www"), vocabulary.PoolCluster("same")}
	got := b.WeightedByClock(pools, clocks)

	weights := func(cluster string) []uint32 {
		var w []uint32
		for _, e := range got[cluster] {
			w = append(w, e.Weight)
		}
		return w
	}
	for _, tt := range []struct {
		name    string
		cluster string
		want    []uint32
	}{
		{"a pool's workers weigh their nodes' clocks, the unlabelled and unknown nodes at the default", vocabulary.PoolCluster("www"), []uint32{11, 18, 40, 40}},
		{"a pool whose workers share a clock rate keeps equal shares", vocabulary.PoolCluster("same"), []uint32{0, 0}},
		{"a cache tier keeps equal shares", vocabulary.CacheCluster("static"), []uint32{0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if w := weights(tt.cluster); !slices.Equal(w, tt.want) {
				t.Errorf("weights %v, want %v", w, tt.want)
			}
		})
	}
	if b[vocabulary.PoolCluster("www")][0].Weight != 0 {
		t.Error("WeightedByClock changed the backends it was given")
	}
	if nodes := b.Nodes(pools); !slices.Equal(nodes, []string{"fast", "slow", "unlabelled"}) {
		t.Errorf("nodes of the pools %v, want [fast slow unlabelled]", nodes)
	}
}

func TestNodeMHz(t *testing.T) {
	for _, tt := range []struct {
		name  string
		label string
		want  float64
	}{
		{"a labelled clock rate counts", "550", 550},
		{"a fractional clock rate counts", "2400.5", 2400.5},
		{"zero falls back to the default", "0", 2000},
		{"a negative rate falls back to the default", "-900", 2000},
		{"an unreadable rate falls back to the default", "fast", 2000},
		{"infinity falls back to the default", "+Inf", 2000},
		{"a missing label falls back to the default", "", 2000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			labels := map[string]string{}
			if tt.label != "" {
				labels[vocabulary.NodeMHzLabel] = tt.label
			}
			if got := NodeMHz(labels, 2000); got != tt.want {
				t.Errorf("NodeMHz(%q) = %v, want %v", tt.label, got, tt.want)
			}
		})
	}
}
