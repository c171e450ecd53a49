package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// Targets of the farm as rendered against Envoy Gateway's configuration on
// the same Envoy: at least its requests/s, at most its CPU per request.
const (
	targetVsEnvoyGateway    = 1.0
	targetCPUVsEnvoyGateway = 1.0
)

// againstEnvoyGateway is the farm as rendered against Envoy Gateway's
// configuration on one workload and protocol.
type againstEnvoyGateway struct {
	workload, protocol string
	farmRPS, egRPS     float64       // medians
	farmCPU, egCPU     time.Duration // Envoy's CPU per request, medians
	rpsRatio, cpuRatio float64       // medians of the ratios within a round
}

func (a againstEnvoyGateway) rpsPass() bool { return a.rpsRatio >= targetVsEnvoyGateway }
func (a againstEnvoyGateway) cpuPass() bool { return a.cpuRatio <= targetCPUVsEnvoyGateway }

// againstEnvoyGateways pairs, in each workload and protocol, the farm as
// rendered (its first farm route) with Envoy Gateway's configuration.
func againstEnvoyGateways(results []*workloadResult) []againstEnvoyGateway {
	var out []againstEnvoyGateway
	for _, res := range results {
		farm := slices.IndexFunc(res.routes, func(r *routeResult) bool { return r.farm && len(r.samples) > 0 })
		eg := slices.IndexFunc(res.routes, func(r *routeResult) bool { return r.envoyGateway && len(r.samples) > 0 })
		if farm < 0 || eg < 0 {
			continue
		}
		f, e := res.routes[farm], res.routes[eg]
		fm, em := f.median(), e.median()
		out = append(out, againstEnvoyGateway{
			workload: res.w.title, protocol: res.proto.title(),
			farmRPS: fm.requestsPerSecond, egRPS: em.requestsPerSecond,
			farmCPU: fm.frontCPU, egCPU: em.frontCPU,
			rpsRatio: pairedRatio(f, e, func(s sample) float64 { return s.requestsPerSecond }),
			cpuRatio: pairedRatio(f, e, func(s sample) float64 { return float64(s.frontCPU) }),
		})
	}
	return out
}

// envoyGatewayMarkdown is the table of the farm against Envoy Gateway's
// configuration ("" without it in the run).
func envoyGatewayMarkdown(results []*workloadResult) string {
	rows := againstEnvoyGateways(results)
	if len(rows) == 0 {
		return ""
	}
	verdict := func(pass bool) string {
		if pass {
			return "PASS"
		}
		return "MISS"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n**Against Envoy Gateway's configuration (egctl %s), same Envoy, arguments and client** (targets: requests/s at least %.1fx, Envoy CPU per request at most %.1fx)\n\n",
		envoyGatewayVersion, targetVsEnvoyGateway, targetCPUVsEnvoyGateway)
	b.WriteString("| Workload | Protocol | Req/s: farm | Req/s: Envoy Gateway | Ratio | Target | CPU/request: farm | CPU/request: Envoy Gateway | Ratio | Target |\n")
	b.WriteString("|---|---|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, a := range rows {
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.2fx | %s | %s | %s | %.2fx | %s |\n", a.workload, a.protocol,
			a.farmRPS, a.egRPS, a.rpsRatio, verdict(a.rpsPass()),
			benchkit.Micros(a.farmCPU), benchkit.Micros(a.egCPU), a.cpuRatio, verdict(a.cpuPass()))
	}
	return b.String()
}
