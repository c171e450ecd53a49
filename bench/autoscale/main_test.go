package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		ok    bool
		check func(c config, only map[string]bool) bool
	}{
		{"no flags give the defaults and every case", nil, true,
			func(c config, only map[string]bool) bool { return c == defaults() && len(only) == 0 }},
		{"a pod start delay is given as a duration", []string{"-pod-start-delay", "90s"}, true,
			func(c config, _ map[string]bool) bool { return c.podStartDelay == 90 }},
		{"cases can be chosen", []string{"-cases", "contoso,flash-crowd"}, true,
			func(_ config, only map[string]bool) bool {
				return only["contoso"] && only["flash-crowd"] && len(only) == 2
			}},
		{"an unknown case is an error", []string{"-cases", "monday"}, false, nil},
		{"a fraction of a second is an error", []string{"-sync", "1500ms"}, false, nil},
		{"a rate window shorter than two scrapes is an error", []string{"-rate-window", "20s"}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, only, err := parseFlags(tt.args)
			if (err == nil) != tt.ok {
				t.Fatalf("error %v, want ok %v", err, tt.ok)
			}
			if tt.check != nil && !tt.check(c, only) {
				t.Errorf("config %+v, cases %v", c, only)
			}
		})
	}
}

func TestBenchRunsACaseAndReportsIt(t *testing.T) {
	var b bytes.Buffer
	if err := bench(&b, defaults(), map[string]bool{"dearer-requests": true}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "#### Dearer requests") || strings.Contains(out, "#### Contoso") || !strings.Contains(out, "| oracle (knows the future) |") {
		t.Errorf("report:\n%s", out)
	}
}
