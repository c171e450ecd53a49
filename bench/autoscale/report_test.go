package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTargets(t *testing.T) {
	oracle := result{replicaMinutes: 1000}
	contoso := scenario{contoso: true}
	flash := scenario{flashCrowd: true}
	tests := []struct {
		name     string
		sc       scenario
		ours     result
		hpa      result
		verdicts []bool
	}{
		{"the Contoso targets pass with no minute above the cap within 1.15x the oracle and fewer replica-minutes than the HPA",
			contoso, result{replicaMinutes: 1100}, result{replicaMinutes: 1200, minutesAboveCap: 5}, []bool{true, true, true, true}},
		{"a minute above the cap misses the Contoso target",
			contoso, result{replicaMinutes: 1100, minutesAboveCap: 1}, result{replicaMinutes: 1200, minutesAboveCap: 5}, []bool{false, true, true, true}},
		{"more than 1.15x the oracle misses",
			contoso, result{replicaMinutes: 1160}, result{replicaMinutes: 1200}, []bool{true, false, true, true}},
		{"as many replica-minutes as the HPA misses",
			scenario{}, result{replicaMinutes: 1200}, result{replicaMinutes: 1200}, []bool{false, true}},
		{"more minutes above the cap than the HPA misses",
			scenario{}, result{replicaMinutes: 1100, minutesAboveCap: 6}, result{replicaMinutes: 1200, minutesAboveCap: 5}, []bool{true, false}},
		{"a flash crowd needs fewer minutes above the cap than the HPA, not as many",
			flash, result{replicaMinutes: 1100, minutesAboveCap: 5}, result{replicaMinutes: 1200, minutesAboveCap: 5}, []bool{true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := caseResult{scenario: tt.sc, oracle: oracle, rows: []row{{"ours", tt.ours}, {"HPA", tt.hpa}}}
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
		rows:     []row{{"ours", result{replicaMinutes: 126, minutesAboveCap: 1, actions: 2, peakReplicas: 3}}, {"HPA", result{replicaMinutes: 130, minutesAboveCap: 3}}},
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
