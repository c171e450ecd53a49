package benchkit

import (
	"flag"
	"slices"
	"testing"
)

func TestManagerFlagsAreTheManagersArguments(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"the defaults", nil, []string{"--kube-api-qps", "1000", "--kube-api-burst", "2000", "--concurrency", "8"}},
		{"a fractional rate is kept", []string{"-kube-api-qps", "2.5", "-kube-api-burst", "5", "-concurrency", "1"},
			[]string{"--kube-api-qps", "2.5", "--kube-api-burst", "5", "--concurrency", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f ManagerFlags
			fs := flag.NewFlagSet("bench", flag.ContinueOnError)
			f.Register(fs, "the baseline gets", "")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if got := f.Args(); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestManagerFlagsSayWhoElseGetsTheRates(t *testing.T) {
	var f ManagerFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	f.Register(fs, "the baseline client gets", "(in parallel per kind)")
	for name, want := range map[string]string{
		"kube-api-qps":   "the manager's --kube-api-qps; the baseline client gets the same",
		"kube-api-burst": "the manager's --kube-api-burst; the baseline client gets the same",
		"concurrency":    "the manager's --concurrency (in parallel per kind)",
	} {
		if got := fs.Lookup(name).Usage; got != want {
			t.Errorf("-%s: %q, want %q", name, got, want)
		}
	}
}
