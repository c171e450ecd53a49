package benchkit

import "testing"

func TestParseLoadAverage(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    string
		wantErr bool
	}{
		{"the three averages are kept, the run queue and last PID dropped", "1.10 1.52 2.49 3/812 40211\n", "1.10, 1.52, 2.49", false},
		{"a line with fewer than three fields is refused", "1.10 1.52\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLoadAverage(tt.line)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseLoadAverage(%q) = %q, %v", tt.line, got, err)
			}
		})
	}
}

func TestLoadAverageReadsThisMachine(t *testing.T) {
	got, err := LoadAverage()
	if err != nil || got == "" {
		t.Fatalf("LoadAverage() = %q, %v", got, err)
	}
}
