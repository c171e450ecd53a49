package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"webfarm.dev/operator/internal/vocabulary"
)

// report is everything the benchmark measured.
type report struct {
	o     options
	start time.Time
	wall  time.Duration

	baseline         *baselineResult
	baselineCPU      cpuSnapshot
	baselineAPI      *apiStats
	baselineChildren map[string]int

	converged                  bool
	createTime, readyTime      time.Duration
	poolsAt, policiesAt, farms time.Duration // when each kind was first all Ready
	final                      readiness
	managerMetrics             samples
	peakRSS                    int64
	operatorCPU                cpuSnapshot
	operatorAPI                *apiStats
	operatorChildren           map[string]int
	deploymentsMarked          int64
	sameObjects                bool
	sameObjectsNote            string
	idleTime, stopTime         time.Duration
	idleMetrics                samples
}

func (r *report) notePartial(s readiness, w workload, elapsed time.Duration) {
	if r.poolsAt == 0 && s.pools == w.poolCount() && s.poolsReady == s.pools {
		r.poolsAt = elapsed
	}
	if r.policiesAt == 0 && s.policies == w.farms && s.policiesReady == s.policies {
		r.policiesAt = elapsed
	}
	if r.farms == 0 && s.farms == w.farms && s.farmsReady == s.farms {
		r.farms = elapsed
	}
}

func diffCPU(before, after cpuSnapshot) cpuSnapshot {
	d := cpuSnapshot{}
	for k, v := range after {
		if b, ok := before[k]; ok {
			d[k] = v - b
		}
	}
	return d
}

// apiStats is what the API server saw during a phase.
type apiStats struct {
	requests, latencySum, latencyCount map[string]float64 // by verb
	apfRejected                        float64
}

func apiDiff(before, after samples) *apiStats {
	sub := func(name, label string) map[string]float64 {
		a, b := after.by(name, label), before.by(name, label)
		for k := range a {
			a[k] -= b[k]
		}
		return a
	}
	return &apiStats{
		requests:     sub("apiserver_request_total", "verb"),
		latencySum:   sub("apiserver_request_duration_seconds_sum", "verb"),
		latencyCount: sub("apiserver_request_duration_seconds_count", "verb"),
		apfRejected:  after.sum("apiserver_flowcontrol_rejected_requests_total") - before.sum("apiserver_flowcontrol_rejected_requests_total"),
	}
}

// childKinds are the kinds of the operator's child objects.
var childKinds = []struct {
	name string
	list string
	gv   interface{ String() string }
}{
	{"Deployment", "DeploymentList", appsv1.SchemeGroupVersion},
	{"ConfigMap", "ConfigMapList", corev1.SchemeGroupVersion},
	{"Service", "ServiceList", corev1.SchemeGroupVersion},
	{"ServiceAccount", "ServiceAccountList", corev1.SchemeGroupVersion},
	{"PodDisruptionBudget", "PodDisruptionBudgetList", policyv1.SchemeGroupVersion},
}

// countChildren counts the operator-managed objects of a namespace by kind.
func countChildren(ctx context.Context, c client.Client, ns string) (map[string]int, error) {
	out := map[string]int{}
	for _, k := range childKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.APIVersion, list.Kind = k.gv.String(), k.list
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{vocabulary.LabelManagedBy: vocabulary.ManagedBy}); err != nil {
			return nil, fmt.Errorf("listing %s: %w", k.name, err)
		}
		out[k.name] = len(list.Items)
	}
	return out, nil
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// compareChildCounts fails when a run made other child objects than the
// renderers give the workload (expected), or when the operator's differ from
// the baseline's by kind: only equal sets make the ratio compare like with
// like. A nil count is a run that was not measured.
func compareChildCounts(expected int, operator, baseline map[string]int) error {
	var errs []error
	for _, run := range []struct {
		name   string
		counts map[string]int
	}{{"operator", operator}, {"baseline", baseline}} {
		if run.counts != nil && total(run.counts) != expected {
			errs = append(errs, fmt.Errorf("the %s made %s child objects (%s), the renderers make %s for this workload",
				run.name, num(total(run.counts)), kinds(run.counts), num(expected)))
		}
	}
	if operator != nil && baseline != nil && !maps.Equal(operator, baseline) {
		errs = append(errs, fmt.Errorf("the operator's child objects (%s) are not the baseline's (%s)", kinds(operator), kinds(baseline)))
	}
	if len(errs) > 0 {
		return fmt.Errorf("the operator and the baseline do not make the same objects: %w", errors.Join(errs...))
	}
	return nil
}

// compareRendering checks that the operator made the objects the baseline
// made: the config hashes of the first pool's and farm's Deployments agree.
func compareRendering(ctx context.Context, c client.Client, o options, b *baselineResult) (bool, string) {
	if b == nil {
		return false, "no baseline"
	}
	hash := func(name string) string {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.operatorNS, Name: name}, d); err != nil {
			return "error: " + err.Error()
		}
		return d.Spec.Template.Annotations[vocabulary.ConfigHashKey]
	}
	pool, frontend := hash(vocabulary.PoolName(poolName(0, 0))), hash(vocabulary.FrontendName(farmName(0)))
	if pool == b.poolHash && frontend == b.frontendHash {
		return true, "pool and frontend config hashes equal"
	}
	return false, fmt.Sprintf("config hashes differ: pool %s vs %s, frontend %s vs %s", pool, b.poolHash, frontend, b.frontendHash)
}

// table renders the results as Markdown, ready for bench/README.md.
func (r *report) table() string {
	var b strings.Builder
	o, w := r.o, r.o.w
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	p("## Results")
	p("")
	p("| | |")
	p("|---|---|")
	p("| Date | %s |", r.start.UTC().Format("2006-01-02 15:04 MST"))
	p("| Machine | %s |", machine())
	p("| Workload | %d WebFarms x %d sites x %d host names: %s AppPools, %s host names, %d CachePolicies (%s custom resources) |",
		w.farms, w.poolsPerFarm, w.hostsPerSite, num(w.poolCount()), num(w.hostCount()), w.farms, num(w.poolCount()+2*w.farms))
	p("| Operator | `bin/manager --kube-api-qps %g --kube-api-burst %d --concurrency %d` |", o.mgr.QPS, o.mgr.Burst, o.mgr.Concurrency)
	p("| Baseline | controller-runtime client, qps %g, burst %d, %d workers, server-side apply |", o.mgr.QPS, o.mgr.Burst, o.mgr.Concurrency)
	if r.wall > 0 {
		p("| Benchmark wall time | %s (both control planes, setup included) |", secs(r.wall))
	}
	p("")
	p("| Measure | Result | Target | |")
	p("|---|---:|---:|---|")
	ready := "not reached"
	if r.converged {
		ready = secs(r.readyTime)
	} else if r.readyTime > 0 {
		ready = fmt.Sprintf("not reached in %s (%s)", secs(r.readyTime), r.final)
	}
	p("| Operator: time until every object is Ready | %s | | |", ready)
	if r.baseline != nil {
		p("| Baseline: bare client applies the same %s child objects | %s | | |", num(r.baseline.applied), secs(r.baseline.wall))
		if r.converged {
			ratio := r.readyTime.Seconds() / r.baseline.wall.Seconds()
			p("| Ratio operator / baseline | %.2fx | <= %.1fx | %s |", ratio, targetRatio, verdict(ratio <= targetRatio))
		}
	}
	if r.peakRSS > 0 {
		p("| Manager peak RSS (VmHWM) | %d MiB | < %d MiB | %s |", r.peakRSS>>20, targetRSS>>20, verdict(r.peakRSS < targetRSS))
	}
	if r.managerMetrics != nil && r.readyTime > 0 {
		n := r.managerMetrics.sum("controller_runtime_reconcile_total")
		p("| Reconciles (all controllers) | %s, %.0f/s | | |", num(int(n)), n/r.readyTime.Seconds())
	}
	if r.createTime > 0 {
		p("| Custom resources created by the benchmark (counted in the time to Ready) | %s in %s | | |", num(w.poolCount()+2*w.farms), secs(r.createTime))
	}
	if r.poolsAt > 0 || r.policiesAt > 0 || r.farms > 0 {
		at := func(d time.Duration) string {
			if d == 0 {
				return "not reached"
			}
			return secs(d)
		}
		p("| All AppPools / CachePolicies / WebFarms Ready at | %s / %s / %s | | |", at(r.poolsAt), at(r.policiesAt), at(r.farms))
	}
	if r.operatorChildren != nil {
		base := "-"
		if r.baselineChildren != nil {
			base = num(total(r.baselineChildren))
		}
		p("| Child objects: operator / baseline (expected %s) | %s / %s | | |", num(w.childCount()), num(total(r.operatorChildren)), base)
		p("| Child objects by kind (operator) | %s | | |", kinds(r.operatorChildren))
	}
	if r.deploymentsMarked > 0 {
		p("| Deployment statuses written by the stand-in Deployment controller | %s | | |", num(int(r.deploymentsMarked)))
	}
	if r.converged {
		p("| Ready objects still Degraded at that moment | %d | | |", r.final.degraded)
	}
	if r.idleMetrics != nil {
		n := r.idleMetrics.sum("controller_runtime_reconcile_total")
		writes := r.idleMetrics.sum("rest_client_requests_total", "method", "PATCH") + r.idleMetrics.sum("rest_client_requests_total", "method", "POST") +
			r.idleMetrics.sum("rest_client_requests_total", "method", "PUT") + r.idleMetrics.sum("rest_client_requests_total", "method", "DELETE")
		p("| Operator idle (work queues empty) at | %s: %s reconciles, %s API writes in all | | |", secs(r.idleTime), num(int(n)), num(int(writes)))
	}
	if r.stopTime > 0 {
		p("| Manager stop after SIGTERM | %s | | |", secs(r.stopTime))
	}
	if r.sameObjectsNote != "" {
		p("| Operator and baseline rendered the same objects | %s (%s) | | |", yesNo(r.sameObjects), r.sameObjectsNote)
	}
	r.diagnostics(p)
	return b.String()
}

// diagnostics says where the time went.
func (r *report) diagnostics(p func(string, ...any)) {
	m := r.managerMetrics
	if m == nil && r.baselineCPU == nil {
		return
	}
	p("")
	p("### Where the time went")
	p("")
	if m != nil {
		p("At the moment every object was Ready:")
		p("")
		p("| Controller | Reconciles | Errors | Mean reconcile | Mean queue wait | Queue adds | Still queued |")
		p("|---|---:|---:|---:|---:|---:|---:|")
		for _, c := range slices.Sorted(maps.Keys(m.by("controller_runtime_reconcile_total", "controller"))) {
			n := m.sum("controller_runtime_reconcile_total", "controller", c)
			errs := m.sum("controller_runtime_reconcile_errors_total", "controller", c)
			rt := mean(m.sum("controller_runtime_reconcile_time_seconds_sum", "controller", c), m.sum("controller_runtime_reconcile_time_seconds_count", "controller", c))
			qw := mean(m.sum("workqueue_queue_duration_seconds_sum", "name", c), m.sum("workqueue_queue_duration_seconds_count", "name", c))
			adds := m.sum("workqueue_adds_total", "name", c)
			depth := m.sum("workqueue_depth", "name", c)
			p("| %s | %s | %s | %s | %s | %s | %s |", c, num(int(n)), num(int(errs)), ms(rt), ms(qw), num(int(adds)), num(int(depth)))
		}
		p("")
		byMethod := m.by("rest_client_requests_total", "method")
		byCode := m.by("rest_client_requests_total", "code")
		p("Manager API requests (rest_client_requests_total): %s; by code: %s.", floats(byMethod), floats(byCode))
		p("")
	}
	p("| Phase | Wall | CPU s: kube-apiserver | etcd | manager | benchmark | Cores busy |")
	p("|---|---:|---:|---:|---:|---:|---:|")
	if r.baseline != nil && r.baselineCPU != nil {
		p("| Baseline | %s | %s |", secs(r.baseline.wall), cpuRow(r.baselineCPU, r.baseline.wall))
	}
	if r.operatorCPU != nil && r.readyTime > 0 {
		p("| Operator | %s | %s |", secs(r.readyTime), cpuRow(r.operatorCPU, r.readyTime))
	}
	p("")
	for _, ph := range []struct {
		name string
		s    *apiStats
	}{{"Baseline", r.baselineAPI}, {"Operator", r.operatorAPI}} {
		if ph.s == nil {
			continue
		}
		var parts []string
		for _, verb := range slices.Sorted(maps.Keys(ph.s.requests)) {
			n := ph.s.requests[verb]
			if n < 1 {
				continue
			}
			part := fmt.Sprintf("%s %s", verb, num(int(n)))
			if verb != "WATCH" {
				part += fmt.Sprintf(" (mean %s)", ms(mean(ph.s.latencySum[verb], ph.s.latencyCount[verb])))
			}
			parts = append(parts, part)
		}
		// The benchmark's identity is in system:masters, which API priority and
		// fairness exempts; only the API server's own requests are queued.
		apf := "no request was rejected by API priority and fairness"
		if ph.s.apfRejected > 0 {
			apf = fmt.Sprintf("%s requests rejected by API priority and fairness", num(int(ph.s.apfRejected)))
		}
		p("%s phase, API server requests by verb: %s; %s.", ph.name, strings.Join(parts, ", "), apf)
		p("")
	}
}

func cpuRow(s cpuSnapshot, wall time.Duration) string {
	t := 0.0
	cols := []string{}
	for _, k := range []string{"kube-apiserver", "etcd", "manager", "benchmark"} {
		v, ok := s[k]
		if !ok {
			cols = append(cols, "-")
			continue
		}
		t += v
		cols = append(cols, fmt.Sprintf("%.1f", v))
	}
	return strings.Join(cols, " | ") + fmt.Sprintf(" | %.2f", t/wall.Seconds())
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func ms(s float64) string { return fmt.Sprintf("%.1f ms", s*1000) }

func mean(sum, count float64) float64 {
	if count == 0 {
		return 0
	}
	return sum / count
}

// num writes an integer with thousands separators.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func kinds(m map[string]int) string {
	var parts []string
	for _, k := range childKinds {
		parts = append(parts, fmt.Sprintf("%s %s", num(m[k.name]), k.name))
	}
	return strings.Join(parts, ", ")
}

func floats(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %s", k, num(int(m[k]))))
	}
	return strings.Join(parts, ", ")
}
