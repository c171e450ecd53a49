package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/render/envoy"
)

// frontend is what a farm-path variant runs: the bootstrap, Envoy's extra
// command-line arguments, and whether Envoy talks HTTP/2 to the pool.
type frontend struct {
	bootstrap  *bootstrapv3.Bootstrap
	args       []string
	upstreamH2 bool
}

// knob is one bench-side change to the rendered frontend. The renderer is
// left alone: a knob that pays off is a candidate to fold into it.
type knob struct {
	name  string
	about string
	// diagnostic knobs give up a feature of the product; they measure a
	// cost and are not candidates for the renderer.
	diagnostic bool
	apply      func(f *frontend, value string) error
}

// knobs, in the order -h lists them.
var knobs = []knob{
	{name: "control", about: "changes nothing: a step of it measures the method's own noise", diagnostic: true, apply: func(*frontend, string) error { return nil }},
	{name: "concurrency", about: "Envoy worker threads (--concurrency), default: as many as the nginx proxy's worker_processes", apply: setConcurrency},
	{name: "no-request-id", about: "generate_request_id: false (no x-request-id UUID per request)", apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.GenerateRequestId = wrapperspb.Bool(false)
		return nil
	})},
	{name: "stats-off", about: "stats_matcher reject_all: Envoy keeps no statistics (the frontend's metrics go too)", diagnostic: true, apply: func(f *frontend, _ string) error {
		f.bootstrap.StatsConfig = &metricsv3.StatsConfig{StatsMatcher: &metricsv3.StatsMatcher{
			StatsMatcher: &metricsv3.StatsMatcher_RejectAll{RejectAll: true},
		}}
		return nil
	}},
	{name: "no-histograms", about: "stats_matcher excluding the latency histograms (request times, connection lengths); every counter and gauge the product reads stays", apply: func(f *frontend, _ string) error {
		f.bootstrap.StatsConfig = &metricsv3.StatsConfig{StatsMatcher: &metricsv3.StatsMatcher{
			StatsMatcher: &metricsv3.StatsMatcher_ExclusionList{ExclusionList: &matcherv3.ListStringMatcher{
				Patterns: []*matcherv3.StringMatcher{{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{
					Regex: `.*(_rq_time|_cx_length_ms|_cx_connect_ms)$`,
				}}}},
			}},
		}}
		return nil
	}},
	{name: "skip-xff", about: "skip_xff_append: the client address is not appended to X-Forwarded-For (the pool's applications lose it)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.SkipXffAppend = true
		return nil
	})},
	{name: "server-passthrough", about: "server_header_transformation PASS_THROUGH: the pool's Server header goes through unchanged", apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.ServerHeaderTransformation = hcmv3.HttpConnectionManager_PASS_THROUGH
		return nil
	})},
	{name: "no-stream-idle-timeout", about: "stream_idle_timeout 0: no idle timer per request (a client trickling a request body is then bounded only by the connection's idle timeout)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.StreamIdleTimeout = durationpb.New(0)
		return nil
	})},
	{name: "buffer", about: "per_connection_buffer_limit_bytes of the farm listener and the pool clusters (Envoy's default: 1 MiB)", apply: setBufferLimit},
	{name: "exact-balance", about: "the listener spreads client connections evenly over the worker threads", apply: func(f *frontend, _ string) error {
		l, err := farmListener(f.bootstrap)
		if err != nil {
			return err
		}
		l.ConnectionBalanceConfig = exactBalance()
		return nil
	}},
	{name: "upstream-max-requests", about: "max_requests_per_connection to the pool (default value 10,000, the pool nginx's keepalive_requests)", apply: setUpstreamMaxRequests},
	{name: "upstream-h2", about: "HTTP/2 to the pool (cleartext, on a second listen port of the pool nginx); needs upstream-max-requests below 10,000, or nginx refuses streams at its limit", apply: setUpstreamH2},
	{name: "no-normalize", about: "normalize_path and merge_slashes off (routing on the raw path)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.NormalizePath = wrapperspb.Bool(false)
		h.MergeSlashes = false
		return nil
	})},
	{name: "no-method-route", about: "one route per prefix: no GET/HEAD route matched by a regular expression on :method, no retry on reset", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		rc := h.GetRouteConfig()
		for _, vh := range rc.GetVirtualHosts() {
			vh.Routes = slices.DeleteFunc(vh.Routes, func(r *routev3.Route) bool { return len(r.GetMatch().GetHeaders()) > 0 })
		}
		return nil
	})},
	{name: "no-retry", about: "no retry policy on the routes", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		for _, vh := range h.GetRouteConfig().GetVirtualHosts() {
			for _, r := range vh.Routes {
				if action := r.GetRoute(); action != nil { // not a redirect
					action.RetryPolicy = nil
				}
			}
		}
		return nil
	})},
	{name: "queue-timeout-filter", about: "adds the filter a farm gets when one of its pools has a queue timeout (the frontend's 503 for a worker's refusal): measures its cost", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.HttpFilters = slices.Insert(h.HttpFilters, len(h.HttpFilters)-1, envoy.QueueTimeoutFilter())
		return nil
	})},
	{name: "access-log-no-cel", about: "the access log's queue field read from the response header (null when served) in place of a CEL expression", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		return editAccessLogFormat(h, func(fields map[string]*structpb.Value) {
			fields["queue"] = structpb.NewStringValue("%RESP(X-Webfarm-Queue)%")
		})
	})},
	{name: "access-log-time-only", about: "the access log with one field, the time: measures the cost of writing a line apart from its fields", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		return editAccessLogFormat(h, func(fields map[string]*structpb.Value) {
			for k := range fields {
				if k != "time" {
					delete(fields, k)
				}
			}
		})
	})},
	{name: "no-access-log", about: "no access log (and no filter recording the path for it)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.AccessLog = nil
		h.HttpFilters = slices.DeleteFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == "envoy.filters.http.header_to_metadata" })
		return nil
	})},
	{name: "router-only", about: "no HTTP filter but the router (affinity, compression, bandwidth limits, the access log's path recorder all go)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.HttpFilters = h.HttpFilters[len(h.HttpFilters)-1:]
		return nil
	})},
	{name: "no-log-line", about: "no access log line (the filter recording the path and worker pod for it stays)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.AccessLog = nil
		return nil
	})},
	{name: "no-header-to-metadata", about: "no header_to_metadata filter (the access log loses the path and the worker pod; X-Webfarm-Worker reaches the client)", diagnostic: true, apply: onHCM(withoutFilter("envoy.filters.http.header_to_metadata"))},
	{name: "no-header-edits", about: "no header added to requests (X-Real-IP) or removed from requests and responses (the sites' inside headers, Server, X-Webfarm-Queue)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		rc := h.GetRouteConfig()
		rc.RequestHeadersToAdd, rc.ResponseHeadersToRemove = nil, nil
		for _, vh := range rc.GetVirtualHosts() {
			for _, r := range vh.Routes {
				r.RequestHeadersToRemove = nil
			}
		}
		return nil
	})},
	{name: "no-affinity", about: "no cookie affinity: no stateful session filter, no route's cookie", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, value string) error {
		for _, vh := range h.GetRouteConfig().GetVirtualHosts() {
			for _, r := range vh.Routes {
				delete(r.TypedPerFilterConfig, statefulSessionFilter)
			}
		}
		return withoutFilter(statefulSessionFilter)(h, value)
	})},
	{name: "no-queue-timeout-filter", about: "no filter answering a worker's queue-timeout refusal (the client gets the worker's own status)", diagnostic: true, apply: onHCM(withoutFilter("envoy.filters.http.custom_response"))},
	{name: "no-local-replies", about: "no local reply mappers (Envoy's own bodies for a full queue and for a pool without a worker)", diagnostic: true, apply: onHCM(func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.LocalReplyConfig = nil
		return nil
	})},
	{name: "no-queue-breakers", about: "no circuit breakers on the pool clusters (no request queue: Envoy's defaults)", diagnostic: true, apply: func(f *frontend, _ string) error {
		for _, c := range poolClusters(f.bootstrap) {
			c.CircuitBreakers = nil
		}
		return nil
	}},
	{name: "no-overload", about: "no overload manager (the cap of 50,000 client connections)", diagnostic: true, apply: func(f *frontend, _ string) error {
		f.bootstrap.OverloadManager = nil
		return nil
	}},
}

// setting is a knob with its value ("" for a switch).
type setting struct {
	knob  knob
	value string
}

func (s setting) String() string {
	if s.value == "" {
		return s.knob.name
	}
	return s.knob.name + "=" + s.value
}

// parseSettings reads a comma-separated list of knobs, each NAME or NAME=VALUE.
func parseSettings(list string) ([]setting, error) {
	var out []setting
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" || item == "none" {
			continue
		}
		name, value, _ := strings.Cut(item, "=")
		i := slices.IndexFunc(knobs, func(k knob) bool { return k.name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown tuning knob %q (known: %s)", name, knobNames())
		}
		out = append(out, setting{knobs[i], value})
	}
	return out, nil
}

// parseSteps reads tuning steps: comma-separated, each one or more settings
// joined by "+".
func parseSteps(list string) ([][]setting, error) {
	var steps [][]setting
	for _, step := range strings.Split(list, ",") {
		if strings.TrimSpace(step) == "" {
			continue
		}
		settings, err := parseSettings(strings.ReplaceAll(step, "+", ","))
		if err != nil {
			return nil, err
		}
		steps = append(steps, settings)
	}
	return steps, nil
}

func knobNames() string {
	names := make([]string, len(knobs))
	for i, k := range knobs {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// applySettings applies the settings in order.
func applySettings(f *frontend, settings []setting) error {
	for _, s := range settings {
		if err := s.knob.apply(f, s.value); err != nil {
			return fmt.Errorf("tuning %s: %w", s, err)
		}
	}
	return nil
}

// onHCM applies an edit to the connection managers of the farm's
// listeners: in clear text and, with TLS sites, over HTTPS.
func onHCM(edit func(*hcmv3.HttpConnectionManager, string) error) func(*frontend, string) error {
	return func(f *frontend, value string) error {
		if _, err := farmListener(f.bootstrap); err != nil {
			return err
		}
		for _, l := range f.bootstrap.StaticResources.Listeners {
			if l.Name != envoy.ListenerName && l.Name != envoy.HTTPSListenerName {
				continue
			}
			var editErr error
			if err := envoy.EditHCM(l, func(h *hcmv3.HttpConnectionManager) { editErr = errors.Join(editErr, edit(h, value)) }); err != nil {
				return err
			}
			if editErr != nil {
				return editErr
			}
		}
		return nil
	}
}

// statefulSessionFilter is the filter of cookie affinity.
const statefulSessionFilter = "envoy.filters.http.stateful_session"

// withoutFilter removes the named HTTP filter.
func withoutFilter(name string) func(*hcmv3.HttpConnectionManager, string) error {
	return func(h *hcmv3.HttpConnectionManager, _ string) error {
		h.HttpFilters = slices.DeleteFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == name })
		return nil
	}
}

// exactBalance has a listener hand each new connection to the worker with
// the fewest, in place of the kernel's spread (SO_REUSEPORT's hash).
func exactBalance() *listenerv3.Listener_ConnectionBalanceConfig {
	return &listenerv3.Listener_ConnectionBalanceConfig{
		BalanceType: &listenerv3.Listener_ConnectionBalanceConfig_ExactBalance_{ExactBalance: &listenerv3.Listener_ConnectionBalanceConfig_ExactBalance{}},
	}
}

// balanceExactly gives every listener of a bootstrap exactBalance.
func balanceExactly(b *bootstrapv3.Bootstrap) {
	for _, l := range b.StaticResources.GetListeners() {
		l.ConnectionBalanceConfig = exactBalance()
	}
}

// concurrencyDefault stands for "as many as the nginx proxy has workers";
// main fills it in.
var concurrencyDefault = 1

// setConcurrency sets Envoy's worker threads, in place of the rendered value.
func setConcurrency(f *frontend, value string) error {
	n := concurrencyDefault
	if value != "" {
		var err error
		if n, err = strconv.Atoi(value); err != nil || n < 1 {
			return fmt.Errorf("concurrency %q: want a positive number", value)
		}
	}
	f.args = withConcurrency(f.args, n)
	return nil
}

// withConcurrency is Envoy's arguments with n worker threads in place of
// the rendered count.
func withConcurrency(args []string, n int) []string {
	args = slices.Clone(args)
	if i := slices.Index(args, "--concurrency"); i >= 0 && i+1 < len(args) {
		args[i+1] = strconv.Itoa(n)
		return args
	}
	return append(args, "--concurrency", strconv.Itoa(n))
}

func setBufferLimit(f *frontend, value string) error {
	n, err := parseSize(value, 32*kib)
	if err != nil {
		return err
	}
	l, err := farmListener(f.bootstrap)
	if err != nil {
		return err
	}
	l.PerConnectionBufferLimitBytes = wrapperspb.UInt32(n)
	for _, c := range poolClusters(f.bootstrap) {
		c.PerConnectionBufferLimitBytes = wrapperspb.UInt32(n)
	}
	return nil
}

func setUpstreamMaxRequests(f *frontend, value string) error {
	n := 10000
	if value != "" {
		var err error
		if n, err = strconv.Atoi(value); err != nil || n < 1 {
			return fmt.Errorf("upstream-max-requests %q: want a positive number", value)
		}
	}
	return editProtocolOptions(f, func(o *httpv3.HttpProtocolOptions) {
		if o.CommonHttpProtocolOptions == nil {
			o.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{}
		}
		o.CommonHttpProtocolOptions.MaxRequestsPerConnection = wrapperspb.UInt32(uint32(n))
	})
}

func setUpstreamH2(f *frontend, _ string) error {
	f.upstreamH2 = true
	return editProtocolOptions(f, func(o *httpv3.HttpProtocolOptions) {
		o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
		}}
	})
}

const protocolOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// editProtocolOptions changes the pool clusters' upstream HTTP options.
func editProtocolOptions(f *frontend, edit func(*httpv3.HttpProtocolOptions)) error {
	for _, c := range poolClusters(f.bootstrap) {
		o := &httpv3.HttpProtocolOptions{}
		if a, ok := c.TypedExtensionProtocolOptions[protocolOptionsKey]; ok {
			if err := a.UnmarshalTo(o); err != nil {
				return err
			}
		}
		edit(o)
		if o.UpstreamProtocolOptions == nil {
			o.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
			}}
		}
		a, err := anypb.New(o)
		if err != nil {
			return err
		}
		if c.TypedExtensionProtocolOptions == nil {
			c.TypedExtensionProtocolOptions = map[string]*anypb.Any{}
		}
		c.TypedExtensionProtocolOptions[protocolOptionsKey] = a
	}
	return nil
}

// parseSize reads a size in bytes such as 32768, 32k or 1m; empty gives def.
func parseSize(value string, def uint32) (uint32, error) {
	if value == "" {
		return def, nil
	}
	mult := uint64(1)
	switch {
	case strings.HasSuffix(strings.ToLower(value), "k"):
		mult, value = kib, value[:len(value)-1]
	case strings.HasSuffix(strings.ToLower(value), "m"):
		mult, value = kib*kib, value[:len(value)-1]
	}
	n, err := strconv.ParseUint(value, 10, 32)
	if err != nil || n == 0 || n*mult > 1<<31 {
		return 0, fmt.Errorf("%q: want a positive size such as 32768, 32k or 1m", value)
	}
	return uint32(n * mult), nil
}

// editAccessLogFormat edits the JSON format of the farm's access log.
func editAccessLogFormat(h *hcmv3.HttpConnectionManager, edit func(map[string]*structpb.Value)) error {
	if len(h.AccessLog) != 1 {
		return fmt.Errorf("%d access logs, want 1", len(h.AccessLog))
	}
	var stdout streamv3.StdoutAccessLog
	if err := h.AccessLog[0].GetTypedConfig().UnmarshalTo(&stdout); err != nil {
		return err
	}
	format := stdout.GetLogFormat().GetJsonFormat()
	if format == nil {
		return fmt.Errorf("the access log has no JSON format")
	}
	edit(format.Fields)
	typed, err := anypb.New(&stdout)
	if err != nil {
		return err
	}
	h.AccessLog[0].ConfigType = &accesslogv3.AccessLog_TypedConfig{TypedConfig: typed}
	return nil
}
