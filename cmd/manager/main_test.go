package main

import (
	"testing"
	"time"
)

func TestLeaseTimings(t *testing.T) {
	tests := []struct {
		name                string
		lease, renew, retry time.Duration
		valid               bool
	}{
		{"controller-runtime's defaults are valid", 15 * time.Second, 10 * time.Second, 2 * time.Second, true},
		{"a longer renew deadline under a longer lease is valid", time.Minute, 40 * time.Second, 2 * time.Second, true},
		{"a renew deadline as long as the lease is refused", 15 * time.Second, 15 * time.Second, 2 * time.Second, false},
		{"a renew deadline within 1.2 retry periods is refused", 15 * time.Second, 2 * time.Second, 2 * time.Second, false},
		{"a zero retry period is refused", 15 * time.Second, 10 * time.Second, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := leaseTimingsValid(tt.lease, tt.renew, tt.retry); (err == nil) != tt.valid {
				t.Errorf("leaseTimingsValid(%s, %s, %s) = %v, want valid %v", tt.lease, tt.renew, tt.retry, err, tt.valid)
			}
		})
	}
}
