package main

import "testing"

// pods is n pods of one core in a group, each using usage cores.
func pods(n int, g hpaGroup, usage float64) []hpaPod {
	ps := make([]hpaPod, n)
	for i := range ps {
		ps[i] = hpaPod{group: g, usage: usage, request: 1}
	}
	return ps
}

func TestCPUUtilizationReplicas(t *testing.T) {
	tests := []struct {
		name    string
		pods    []hpaPod
		current int
		want    int
		ok      bool
	}{
		{"the HPA ignores a ratio within the 0.1 tolerance", pods(4, counted, 0.32), 4, 4, true},
		{"the HPA scales up to ceil(ready pods x utilisation / target)", pods(4, counted, 0.45), 4, 6, true},
		{"the HPA scales down the same way", pods(4, counted, 0.15), 4, 2, true},
		{"not-yet-ready pods count as using nothing on a scale-up, which may cancel it",
			append(pods(4, counted, 0.45), pods(2, notYetReady, 0)...), 6, 6, true},
		{"not-yet-ready pods damp a scale-up that they do not cancel",
			append(pods(4, counted, 0.9), pods(2, notYetReady, 0)...), 6, 12, true},
		{"not-yet-ready pods are left out of a scale-down",
			append(pods(2, counted, 0.15), pods(2, notYetReady, 0)...), 4, 1, true},
		{"a pod without a metric counts as its whole request on a scale-down, which may turn it round",
			append(pods(3, counted, 0.15), pods(1, missing, 0)...), 4, 4, true},
		{"a pod without a metric counts as nothing on a scale-up",
			append(pods(3, counted, 0.6), pods(1, missing, 0)...), 4, 6, true},
		{"no pod with a metric gives no decision", pods(3, notYetReady, 0), 3, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cpuUtilizationReplicas(tt.pods, tt.current, 0.30, 0.1)
			if got != tt.want || ok != tt.ok {
				t.Errorf("%d replicas (%v), want %d (%v)", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestHPAPodsGroupsAsTheHPADoes(t *testing.T) {
	r := reading{now: 200, pods: []podReading{
		{ready: false, created: 180, readySince: 225},
		{ready: true, created: 100, readySince: 145, measured: true, measuredAt: 190, cores: 0.2},
		{ready: true, created: 50, readySince: 95, measured: true, measuredAt: 190, cores: 0.3},
		{ready: true, created: 100, readySince: 145},
		{ready: true, created: -500, readySince: -455, measured: true, measuredAt: 190, cores: 0.3},
	}}
	got := hpaPods(r, 1, 60)
	tests := []struct {
		name string
		pod  int
		want hpaGroup
	}{
		{"a pod that is not ready is not yet ready", 0, notYetReady},
		{"a pod ready for less than a metric window is not yet ready", 1, notYetReady},
		{"a pod whose metric window began after it was ready counts", 2, counted},
		{"a ready pod without a metric is missing", 3, missing},
		{"a pod past its CPU initialisation period counts", 4, counted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got[tt.pod].group != tt.want {
				t.Errorf("group %d, want %d", got[tt.pod].group, tt.want)
			}
		})
	}
}

func TestAverageValueReplicas(t *testing.T) {
	tests := []struct {
		name    string
		total   float64
		current int
		want    int
	}{
		{"KEDA's threshold asks for the total over 66 requests/s per pod", 600, 5, 10},
		{"the HPA ignores a total within the 0.1 tolerance of 66 per pod", 600, 9, 9},
		{"a falling total asks for fewer pods", 130, 5, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := averageValueReplicas(tt.total, 66, tt.current, 0.1); got != tt.want {
				t.Errorf("%d replicas, want %d", got, tt.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	b := hpaBehavior{minReplicas: 1, maxReplicas: 50, downWindow: 300, period: 15, upPods: 4, upPercent: 100}
	type call struct{ now, current, desired int }
	tests := []struct {
		name    string
		history []call
		last    call
		want    int
	}{
		{"a scale-down takes the highest recommendation of the last 300 s",
			[]call{{0, 10, 10}, {100, 10, 8}}, call{350, 10, 5}, 8},
		{"a recommendation 300 s old no longer holds the count",
			[]call{{0, 10, 10}, {100, 10, 8}}, call{400, 10, 5}, 5},
		{"a scale-up is limited to +4 pods in 15 s from few pods", nil, call{0, 3, 20}, 7},
		{"a scale-up is limited to double in 15 s from many pods", nil, call{0, 10, 30}, 20},
		{"pods added within the period count against the limit",
			[]call{{0, 3, 20}}, call{10, 7, 20}, 7},
		{"a period later the limit applies again", []call{{0, 3, 20}}, call{15, 7, 20}, 14},
		{"the count stays within the maximum", nil, call{0, 40, 60}, 50},
		{"the count stays at or above the minimum", nil, call{0, 2, 0}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s hpaState
			for _, c := range tt.history {
				s.normalize(b, c.now, c.current, c.desired)
			}
			if got := s.normalize(b, tt.last.now, tt.last.current, tt.last.desired); got != tt.want {
				t.Errorf("%d replicas, want %d", got, tt.want)
			}
		})
	}
}
