package vocabulary

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAnAgentsTokenIsReadFromItsConfigurationFile(t *testing.T) {
	token := strings.Repeat("a1", MinAdminTokenLength/2)
	file := func(token string) string {
		b, err := json.Marshal(AgentConfig{FrequentHitPeriod: Duration(10 * time.Second), AdminToken: token})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, file, want string
	}{
		{"a file the operator rendered gives its token", file(token), token},
		{"a token shorter than the minimum is none", file(token[:MinAdminTokenLength-1]), ""},
		{"a file someone broke has none", "{not json", ""},
		{"no file has none", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AdminTokenOf(tt.file); got != tt.want {
				t.Errorf("AdminTokenOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestANewAdminTokenIsLongEnoughAndNeverRepeats(t *testing.T) {
	a, err := NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < MinAdminTokenLength || a == b {
		t.Errorf("tokens %q and %q: want two different ones of at least %d characters", a, b, MinAdminTokenLength)
	}
}
