package main

import (
	"math"
	"reflect"
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

func TestDefaultNodeMHz(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mhz   float64
		valid bool
	}{
		{"the default 2000 MHz is valid", 2000, true},
		{"a fraction of a MHz is valid", 0.5, true},
		{"zero is refused", 0, false},
		{"a negative rate is refused", -550, false},
		{"infinity is refused", math.Inf(1), false},
		{"NaN is refused", math.NaN(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := defaultNodeMHzValid(tt.mhz); (err == nil) != tt.valid {
				t.Errorf("defaultNodeMHzValid(%v) = %v, want valid %v", tt.mhz, err, tt.valid)
			}
		})
	}
}

func TestTheOperatorsPodsAreNamedForThePoolsPolicies(t *testing.T) {
	for _, tt := range []struct {
		name, namespace, labels string
		want                    map[string]string // nil: refused
	}{
		{"the chart's labels and namespace are taken", "webfarm-system", "app.kubernetes.io/name=webfarm-operator,app.kubernetes.io/instance=wf",
			map[string]string{"app.kubernetes.io/name": "webfarm-operator", "app.kubernetes.io/instance": "wf"}},
		{"no labels are refused: the policies would shut the operator out", "webfarm-system", "", nil},
		{"a selector that is not a set of labels is refused", "webfarm-system", "app in (a,b)", nil},
		{"a namespace that cannot be one is refused", "Webfarm_System", "app=x", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			iso, err := isolation(tt.namespace, tt.labels)
			switch {
			case tt.want == nil && err == nil:
				t.Errorf("isolation(%q, %q) = %+v; want an error", tt.namespace, tt.labels, iso)
			case tt.want != nil && (err != nil || iso.OperatorNamespace != tt.namespace || !reflect.DeepEqual(iso.OperatorPodLabels, tt.want)):
				t.Errorf("isolation(%q, %q) = %+v, %v; want labels %v", tt.namespace, tt.labels, iso, err, tt.want)
			}
		})
	}
}

func TestControlCA(t *testing.T) {
	for _, tt := range []struct {
		name     string
		secret   string
		lifetime time.Duration
		valid    bool
	}{
		{"the chart's Secret and lifetime are valid", "webfarm-system/webfarm-control-ca", 24 * time.Hour, true},
		{"a lifetime of a minute is valid", "webfarm-system/ca", time.Minute, true},
		{"a Secret without its namespace is refused", "webfarm-control-ca", 24 * time.Hour, false},
		{"a namespace that is no DNS label is refused", "Webfarm_System/ca", 24 * time.Hour, false},
		{"an empty Secret name is refused", "webfarm-system/", 24 * time.Hour, false},
		{"a lifetime under a minute is refused", "webfarm-system/ca", 59 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := controlCAValid(tt.secret, tt.lifetime); (err == nil) != tt.valid {
				t.Errorf("controlCAValid(%q, %s) = %v, want valid %v", tt.secret, tt.lifetime, err, tt.valid)
			}
		})
	}
}
