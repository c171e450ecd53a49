// Package conformance runs the upstream Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance) against the operator on the local
// cluster and writes its report. The run is run.go (RunSuite: a test of the
// end-to-end suite, `make test-e2e`, or alone, `make test-conformance`); this
// file holds what it claims and the report's rendering, pure and tested
// without a cluster.
package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
)

const (
	// GatewayClassName is the GatewayClass the suite's Gateways name.
	GatewayClassName = "webfarm"
	// ControllerName is the operator's Gateway API controller.
	ControllerName = "webfarm.dev/gateway-controller"
	// Profile is the conformance profile the run reports: Gateways serving
	// HTTPRoutes, whose core features (Gateway, HTTPRoute, ReferenceGrant)
	// every run tests.
	Profile = suite.GatewayHTTPConformanceProfileName
)

// ExtendedFeatures are the GATEWAY-HTTP profile's extended features the
// operator claims: the matches, filters and timeouts internal/gateway
// translates and a farm's Envoy frontend serves. The suite runs the tests
// of these and of the core features; claim a feature here when the
// controller supports it.
var ExtendedFeatures = []features.FeatureName{
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
}

// SkippedTests are the suite's tests the run skips, each with why: what
// they test is refused on purpose, and the reason is the design's.
var SkippedTests = map[string]string{
	"GatewaySecretReferenceGrantAllInNamespace": crossNamespaceSecrets,
	"GatewaySecretReferenceGrantSpecific":       crossNamespaceSecrets,
}

const crossNamespaceSecrets = "a listener's certificate must be a Secret of the Gateway's namespace, even with a ReferenceGrant: " +
	"the farm's frontend pods mount it, a pod mounts Secrets of its own namespace only, and the operator reads no Secret " +
	"(it has no right to), so it cannot copy one across; such a listener is refused with InvalidCertificateRef"

// Outcome is how one of the suite's tests ended.
type Outcome string

const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped"
	// NotClaimed tests need a feature the operator does not claim; the suite
	// skips them.
	NotClaimed Outcome = "not claimed"
)

// TestResult is one of the suite's tests as it ran.
type TestResult struct {
	Name     string
	Features []string
	Outcome  Outcome
}

// ProfileResult is the suite's verdict on a profile (its report's
// profiles[].core and .extended).
type ProfileResult struct {
	Core, Extended string // success, partial or failure; empty when no test ran
}

// Run is one run of the suite, as the report tells it.
type Run struct {
	SuiteVersion      string // of sigs.k8s.io/gateway-api/conformance
	GatewayAPIVersion string // of the CRDs on the cluster, as the suite read them
	GatewayAPIChannel string
	Implementation    string // the operator's release
	CoreFeatures      []string
	ClaimedFeatures   []string // the profile's extended features claimed
	UnclaimedFeatures []string // and those not claimed
	Date              time.Time
	Duration          time.Duration
	BaseSetup         time.Duration // images served, base manifests applied, their pods Ready
	Result            ProfileResult
	Tests             []TestResult
	StoppedInSetup    string // why no test ran, when none did
	ReportFile        string // the suite's own YAML report
	ReproduceCommand  string
}

// NewRun fills in what every report states, written by command: the profile's core features,
// its extended ones claimed and not claimed, sorted.
func NewRun(command string) Run {
	profile := suite.GatewayHTTPConformanceProfile
	return Run{
		ReproduceCommand:  command,
		CoreFeatures:      names(profile.CoreFeatures.UnsortedList()),
		ClaimedFeatures:   names(ExtendedFeatures),
		UnclaimedFeatures: names(profile.ExtendedFeatures.Difference(sets.New(ExtendedFeatures...)).UnsortedList()),
	}
}

// names are the features' names, sorted.
func names(fs []features.FeatureName) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	slices.Sort(out)
	return out
}

// OutcomeOf classifies a finished test: failed and skipped as the test
// ended; a skip is "not claimed" when the test needs a feature outside
// claimed.
func OutcomeOf(failed, skipped bool, needs []features.FeatureName, claimed func(features.FeatureName) bool) Outcome {
	switch {
	case failed:
		return Failed
	case skipped && !slices.ContainsFunc(needs, func(f features.FeatureName) bool { return !claimed(f) }):
		return Skipped
	case skipped:
		return NotClaimed
	default:
		return Passed
	}
}

// Markdown is the report as docs/gateway-api-conformance.md: what ran, with
// which suite and claims, and each test's outcome (tests of features not
// claimed counted, not listed). The same Run gives the same text.
func Markdown(r Run) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Gateway API conformance")
	p("")
	p("The operator's Gateway API implementation (GatewayClass `%s`, controller `%s`) checked by the", GatewayClassName, ControllerName)
	p("upstream conformance suite, on the local single-node cluster. Written by `%s` (test/conformance);", r.ReproduceCommand)
	p("do not edit. The suite's own YAML report of the same run is `%s`.", r.ReportFile)
	p("")
	p("| | |")
	p("|---|---|")
	p("| Suite | `sigs.k8s.io/gateway-api/conformance` %s |", r.SuiteVersion)
	p("| Gateway API on the cluster | %s, %s channel |", orUnknown(r.GatewayAPIVersion), orUnknown(r.GatewayAPIChannel))
	p("| Implementation | webfarm-operator %s |", r.Implementation)
	p("| Profile | %s |", Profile)
	p("| Core features | %s |", codeList(r.CoreFeatures))
	p("| Extended features claimed | %s |", codeList(r.ClaimedFeatures))
	p("| Extended features not claimed | %s |", codeList(r.UnclaimedFeatures))
	p("| Date | %s |", r.Date.UTC().Format(time.RFC3339))
	p("| Duration | %s (base setup: %s) |", r.Duration.Round(time.Second), r.BaseSetup.Round(time.Second))
	p("")
	p("## Result")
	p("")
	if r.StoppedInSetup != "" {
		p("The suite stopped in its setup, before any test: %s", r.StoppedInSetup)
		p("")
	}
	p("- Core: %s", resultText(r.Result.Core, count(r.Tests, func(t TestResult) bool { return !isExtended(t, r.CoreFeatures) })))
	p("- Extended: %s", resultText(r.Result.Extended, count(r.Tests, func(t TestResult) bool { return isExtended(t, r.CoreFeatures) })))
	p("")
	p("## Tests")
	p("")
	ran := slices.DeleteFunc(slices.Clone(r.Tests), func(t TestResult) bool { return t.Outcome == NotClaimed })
	slices.SortFunc(ran, func(a, b TestResult) int { return strings.Compare(a.Name, b.Name) })
	if len(ran) == 0 {
		p("No test ran.")
	} else {
		p("| Test | Features | Outcome |")
		p("|---|---|---|")
		for _, t := range ran {
			p("| %s | %s | %s |", t.Name, codeList(t.Features), t.Outcome)
		}
	}
	if len(r.Tests) > 0 && len(SkippedTests) > 0 {
		p("")
		p("## Tests skipped by design")
		p("")
		p("| Test | Why |")
		p("|---|---|")
		for _, name := range slices.Sorted(maps.Keys(SkippedTests)) {
			p("| %s | %s |", name, SkippedTests[name])
		}
	}
	if n := len(r.Tests) - len(ran); n > 0 {
		p("")
		p("%d more tests of the suite need features not claimed here (other profiles' or extended ones): the suite skipped them.", n)
	}
	return b.String()
}

// isExtended tells whether a test needs a feature beyond the profile's core
// ones, as the suite classifies it.
func isExtended(t TestResult, core []string) bool {
	return slices.ContainsFunc(t.Features, func(f string) bool { return !slices.Contains(core, f) })
}

// count tallies the outcomes of the tests that match.
func count(tests []TestResult, match func(TestResult) bool) map[Outcome]int {
	n := map[Outcome]int{}
	for _, t := range tests {
		if match(t) {
			n[t.Outcome]++
		}
	}
	return n
}

func resultText(result string, n map[Outcome]int) string {
	if result == "" {
		result = "not run"
	}
	return fmt.Sprintf("%s (%d passed, %d failed, %d skipped)", result, n[Passed], n[Failed], n[Skipped])
}

func codeList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
