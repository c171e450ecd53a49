package benchkit

import "testing"

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"no values give zero", nil, 0},
		{"an odd count gives the middle value", []float64{9, 1, 5}, 5},
		{"an even count gives the mean of the two middle values", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Median(tt.in); got != tt.want {
				t.Errorf("Median(%v) = %g, want %g", tt.in, got, tt.want)
			}
		})
	}
}

func TestPairedRatio(t *testing.T) {
	id := func(v float64) float64 { return v }
	tests := []struct {
		name      string
		got, want float64
	}{
		{"the paired ratio is the median of the ratios within each round", PairedRatio([]float64{20, 30, 10}, []float64{10, 10, 10}, id), 2},
		{"a round the other path did not measure is left out", PairedRatio([]float64{20, 30}, []float64{10}, id), 2},
		{"a round where the other figure is 0 is left out", PairedRatio([]float64{20, 30}, []float64{10, 0}, id), 2},
		{"the median of a figure over samples", MedianOf([]float64{4, 1, 3, 2}, id), 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}
