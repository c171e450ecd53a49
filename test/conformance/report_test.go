package conformance

import (
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/gateway-api/pkg/features"
)

func TestOutcomeOf(t *testing.T) {
	claimed := func(f features.FeatureName) bool {
		return f == features.SupportGateway || f == features.SupportHTTPRoute
	}
	core := []features.FeatureName{features.SupportGateway, features.SupportHTTPRoute}
	unclaimed := []features.FeatureName{features.SupportGateway, features.SupportHTTPRouteRequestMirror}
	tests := []struct {
		name            string
		failed, skipped bool
		needs           []features.FeatureName
		want            Outcome
	}{
		{"a test that ended well passed", false, false, core, Passed},
		{"a test that failed failed", true, false, core, Failed},
		{"a skipped test of claimed features is skipped", false, true, core, Skipped},
		{"a skipped test that needs an unclaimed feature is not claimed", false, true, unclaimed, NotClaimed},
		{"a failure counts even when a feature is not claimed", true, true, unclaimed, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OutcomeOf(tt.failed, tt.skipped, tt.needs, claimed); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	base := func() Run {
		r := NewRun("make test-conformance")
		r.SuiteVersion, r.Implementation, r.ReportFile = "v1.6.3", "0.2.0", "bin/report.yaml"
		r.GatewayAPIVersion, r.GatewayAPIChannel = "v1.6.3", "standard"
		r.Date = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		r.Duration, r.BaseSetup = 95*time.Second, 40*time.Second
		return r
	}
	ran := []TestResult{
		{Name: "HTTPRouteSimpleSameNamespace", Features: []string{"Gateway", "HTTPRoute"}, Outcome: Failed},
		{Name: "GatewayInvalidRouteKind", Features: []string{"Gateway"}, Outcome: Passed},
		{Name: "HTTPRouteRequestMirror", Features: []string{"Gateway", "HTTPRoute", "HTTPRouteRequestMirror"}, Outcome: NotClaimed},
		{Name: "HTTPRouteSchemeRedirect", Features: []string{"Gateway", "HTTPRoute", "HTTPRouteSchemeRedirect"}, Outcome: Skipped},
	}
	tests := []struct {
		name   string
		run    func() Run
		want   []string // in this order
		absent []string
	}{
		{
			name: "a run stopped in its setup says why and that no test ran",
			run: func() Run {
				r := base()
				r.StoppedInSetup = "GatewayClass webfarm was not accepted."
				return r
			},
			want: []string{"| Suite | `sigs.k8s.io/gateway-api/conformance` v1.6.3 |", "| Profile | GATEWAY-HTTP |",
				"| Core features | `Gateway`, `HTTPRoute`, `ReferenceGrant` |",
				"The suite stopped in its setup, before any test: GatewayClass webfarm was not accepted.",
				"- Core: not run (0 passed, 0 failed, 0 skipped)", "No test ran."},
			absent: []string{"| Test |"},
		},
		{
			name: "the tests that ran are listed by name, then those skipped by design with why; those of unclaimed features are only counted",
			run: func() Run {
				r := base()
				r.Tests = ran
				r.Result = ProfileResult{Core: "failure", Extended: "partial"}
				return r
			},
			want: []string{"- Core: failure (1 passed, 1 failed, 0 skipped)", "- Extended: partial (0 passed, 0 failed, 1 skipped)",
				"| GatewayInvalidRouteKind | `Gateway` | passed |", "| HTTPRouteSchemeRedirect |", "| HTTPRouteSimpleSameNamespace |",
				"## Tests skipped by design", "| GatewaySecretReferenceGrantAllInNamespace | a listener's certificate must be a Secret of the Gateway's namespace",
				"1 more tests of the suite need features not claimed here"},
			absent: []string{"| HTTPRouteRequestMirror |", "stopped in its setup"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Markdown(tt.run())
			at := 0
			for _, w := range tt.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("missing (or out of order) %q in:\n%s", w, got)
				}
				at += i + len(w)
			}
			for _, a := range tt.absent {
				if strings.Contains(got, a) {
					t.Errorf("unexpected %q in:\n%s", a, got)
				}
			}
		})
	}

	t.Run("the same run gives the same text, whatever order its tests finished in", func(t *testing.T) {
		r := base()
		r.Tests = ran
		first := Markdown(r)
		r.Tests = slices.Clone(ran)
		slices.Reverse(r.Tests)
		if again := Markdown(r); again != first {
			t.Errorf("two renderings differ:\n%s\n---\n%s", first, again)
		}
	})
}
