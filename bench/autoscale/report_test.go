package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTargets(t *testing.T) {
	oracle := result{replicaMinutes: 1000, peakReplicas: 20}
	contoso := scenario{contoso: true}
	flash := scenario{flashCrowd: true}
	hpa := result{replicaMinutes: 1000, minutesAboveCap: 50, actions: 20}
	hold := result{replicaMinutes: 1100, minutesAboveCap: 10, actions: 20}
	tests := []struct {
		name     string
		sc       scenario
		ours     result
		verdicts []bool // in the order targets gives them
	}{
		{"on the Contoso case ours has no minute above the cap within 1.15x the oracle and 1.5x the actions of the HPA set to hold the cap",
			contoso, result{replicaMinutes: 1100, actions: 30}, []bool{true, true, true, true, false, true}},
		{"a minute above the cap misses the Contoso target but not the others",
			contoso, result{replicaMinutes: 1100, minutesAboveCap: 1, actions: 30}, []bool{false, true, true, true, false, true}},
		{"more than 1.15x the oracle misses",
			scenario{}, result{replicaMinutes: 1160}, []bool{false, true, true, false, true}},
		{"as many minutes above the cap as the HPA set to hold it misses",
			scenario{}, result{replicaMinutes: 1100, minutesAboveCap: 10}, []bool{true, false, true, false, true}},
		{"no minute above the cap passes even when the HPA set to hold it has none",
			scenario{}, result{replicaMinutes: 1100}, []bool{true, true, true, false, true}},
		{"more than 1.5x the actions of the HPA set to hold the cap misses",
			scenario{}, result{replicaMinutes: 1100, actions: 31}, []bool{true, true, false, false, true}},
		{"fewer replica-minutes than the HPA pass",
			scenario{}, result{replicaMinutes: 999}, []bool{true, true, true, true, true}},
		{"more minutes above the cap than the HPA miss",
			scenario{}, result{replicaMinutes: 1100, minutesAboveCap: 51}, []bool{true, false, true, false, false}},
		{"a flash crowd needs fewer minutes above the cap than the HPA and a peak within 1.25x the oracle's",
			flash, result{replicaMinutes: 1100, peakReplicas: 25}, []bool{true, true, true, false, true, true, true}},
		{"a flash crowd's peak above 1.25x the oracle's misses",
			flash, result{replicaMinutes: 1100, peakReplicas: 26}, []bool{true, true, true, false, true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := caseResult{scenario: tt.sc, oracle: oracle, rows: []row{{"ours", tt.ours}, {"HPA", hpa}, {"KEDA", hpa}, {"HPA holding the cap", hold}}}
			ts := targets(cr)
			if len(ts) != len(tt.verdicts) {
				t.Fatalf("%d targets, want %d", len(ts), len(tt.verdicts))
			}
			for i, want := range tt.verdicts {
				if ts[i].pass != want {
					t.Errorf("%q: pass %v, want %v", ts[i].claim, ts[i].pass, want)
				}
			}
		})
	}
}

func TestWriteCasePrintsATableAndTheVerdicts(t *testing.T) {
	cr := caseResult{
		scenario: scenario{title: "Flat", about: "100 requests/s", length: int(hour), load: constant(100), flashCrowd: true},
		oracle:   result{replicaMinutes: 120, peakReplicas: 2},
		rows: []row{{"ours", result{replicaMinutes: 126, minutesAboveCap: 1, actions: 2, peakReplicas: 3}}, {"HPA", result{replicaMinutes: 130, minutesAboveCap: 3}},
			{"KEDA", result{replicaMinutes: 130, minutesAboveCap: 3}}, {"HPA holding the cap", result{replicaMinutes: 140, minutesAboveCap: 2, actions: 2}}},
	}
	var b bytes.Buffer
	writeCase(&b, cr, defaults())
	for _, want := range []string{
		"#### Flat", "Mean 100 requests/s, peak 100.",
		"| ours | 126 | 1.05 | 1 | 2 | 3 |",
		"- PASS ours: fewer minutes above the cap than the HPA (1 against 3)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
