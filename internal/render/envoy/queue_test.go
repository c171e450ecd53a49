package envoy

import "testing"

func TestShare(t *testing.T) {
	for _, tt := range []struct {
		name             string
		limit, frontends int32
		want             uint32
	}{
		{"one frontend enforces the whole limit", 100, 1, 100},
		{"two frontends split an even limit", 100, 2, 50},
		{"an odd limit rounds up so no capacity is refused", 5, 2, 3},
		{"each frontend keeps at least one slot", 1, 4, 1},
		{"an unset frontend count counts as one", 7, 0, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := share(tt.limit, tt.frontends); got != tt.want {
				t.Errorf("share(%d, %d) = %d, want %d", tt.limit, tt.frontends, got, tt.want)
			}
		})
	}
}
