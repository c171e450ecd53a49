package envoy

import (
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	headertometadatav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_to_metadata/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"webfarm.dev/operator/internal/model"
)

// The frontend's access log: a JSON line per request on Envoy's standard
// output (IIS's W3C log, one per frontend replica), read with kubectl logs.

// QueueHeader is on the frontend's own 503s for a pool's queue: QueueRejected
// (the queue was full) or QueueTimedOut (the request waited past the pool's
// queue timeout). The route configuration strips it from upstream
// responses, so an application cannot pass for the queue.
const QueueHeader = "X-Webfarm-Queue"

// What the pool's queue did with a request, in the access log's queue field.
const (
	// QueueServed: the queue did not refuse the request (it went to a
	// worker, or never reached a pool).
	QueueServed   = "served"
	QueueRejected = "rejected"
	QueueTimedOut = "timedOut"
)

// logMetadata is the metadata namespace the access log reads: the route's
// site, pool and cache policy, and the path as the client sent it.
const logMetadata = "webfarm"

// accessLogFields are the access log's JSON fields and the Envoy command
// operators that fill them; a value Envoy does not have is null.
var accessLogFields = map[string]string{
	"time": "%START_TIME%",
	"site": "%METADATA(ROUTE:" + logMetadata + ":site)%",
	// The Host header as the sites match it, without a port.
	"host":   "%REQ(:AUTHORITY)%",
	"method": "%REQ(:METHOD)%",
	// The route takes its prefix off the path; the log shows the client's.
	"path":          "%DYNAMIC_METADATA(" + logMetadata + ":path)%",
	"status":        "%RESPONSE_CODE%",
	"responseFlags": "%RESPONSE_FLAGS%",
	"durationMs":    "%DURATION%",
	// From the first byte sent to the worker to the last byte of its answer.
	"upstreamTimeMs": "%COMMON_DURATION(US_TX_BEG:US_RX_END:ms)%",
	// From the request's arrival to its first byte sent to a worker: mostly
	// the wait in the pool's queue.
	"queueTimeMs":   "%COMMON_DURATION(DS_RX_BEG:US_TX_BEG:ms)%",
	"bytesIn":       "%BYTES_RECEIVED%",
	"bytesOut":      "%BYTES_SENT%",
	"clientAddress": "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
	"requestId":     "%REQ(X-REQUEST-ID)%",
	"pool":          "%METADATA(ROUTE:" + logMetadata + ":pool)%",
	"cachePolicy":   "%METADATA(ROUTE:" + logMetadata + ":cachePolicy)%",
	// The upstream that answered: a pool's worker, or a cache tier's pod.
	"worker": "%UPSTREAM_HOST%",
	// The name of the pool's worker pod that made the answer (for a cache
	// hit, the one that made the cached answer), kept by headerRecorder:
	// the header itself may not reach the client.
	"workerPod":   "%DYNAMIC_METADATA(" + logMetadata + ":workerPod)%",
	"cacheStatus": "%RESP(" + cacheStatusHeader + ")%",
	// Envoy's formatters have no default value; CEL (built into Envoy's
	// formatter) gives one.
	"queue": "%CEL('" + queueKey + "' in response.headers ? response.headers['" + queueKey + "'] : '" + QueueServed + "')%",
	// Which client limit ended the request (clientlimits.go), if any.
	"limit":      limitField,
	"tlsVersion": "%DOWNSTREAM_TLS_VERSION%",
	"sni":        "%REQUESTED_SERVER_NAME%",
}

// limitField names the client limit that ended a request from Envoy's
// reason for its answer; a rate limit's answer names its limit itself (in L4
// mode that answer is redirected to be reset, and the reason says so).
var limitField = "%CEL(" +
	"response.code == 429 && response.code_details in ['local_rate_limited', 'internal_redirect'] ? response.headers['" + strings.ToLower(LimitHeader) + "'] : " +
	"response.code_details == 'request_header_timeout' ? '" + LimitHeadersTimeout + "' : " +
	"response.code_details == 'request_overall_timeout' ? '" + LimitBodyTimeout + "' : " +
	"response.code_details.endsWith('headers_too_large') || response.code_details.endsWith('too_many_headers') ? '" + LimitHeadersSize + "' : " +
	"'" + LimitNone + "')%"

// cacheStatusHeader is on the cache tier's answers: HIT, MISS, EXPIRED...
// (nginx's $upstream_cache_status, internal/render/nginx/templates/cache.tmpl).
const cacheStatusHeader = "X-Cache-Status"

// workerHeader is on a pool worker's answers: its pod's name
// (internal/render/nginx/templates/pool.tmpl).
const workerHeader = "X-Webfarm-Worker"

// queueKey is QueueHeader as Envoy's header maps key it.
var queueKey = strings.ToLower(QueueHeader)

// sampleRuntimeKey lets an operator of the Envoy override the sampling
// percentage at run time; the farm's setting is the default.
const sampleRuntimeKey = "webfarm.access_log.sample_percent"

// accessLogs are the HTTP connection manager's access logs: none when the
// farm turned the log off.
func accessLogs(l model.AccessLog) []*accesslogv3.AccessLog {
	if !l.Enabled {
		return nil
	}
	fields := make(map[string]any, len(accessLogFields))
	for name, operator := range accessLogFields {
		fields[name] = operator
	}
	format, err := structpb.NewStruct(fields)
	if err != nil {
		panic(err) // strings only: cannot fail
	}
	log := &accesslogv3.AccessLog{
		Name: "envoy.access_loggers.stdout",
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: mustAny(&streamv3.StdoutAccessLog{
			AccessLogFormat: &streamv3.StdoutAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
				Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: format},
			}},
		})},
	}
	if l.SamplePercent < 100 {
		log.Filter = &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_RuntimeFilter{RuntimeFilter: &accesslogv3.RuntimeFilter{
			RuntimeKey:     sampleRuntimeKey,
			PercentSampled: &typev3.FractionalPercent{Numerator: uint32(l.SamplePercent), Denominator: typev3.FractionalPercent_HUNDRED},
			// Each request drawn on its own, not by its request ID, which a
			// client may choose.
			UseIndependentRandomness: true,
		}}}
	}
	return []*accesslogv3.AccessLog{log}
}

// headerRecorder keeps for the access log the path as the client sent it
// (after normalisation: routes rewrite it before the log is written) and the
// worker pod a pool's answer names; unless the farm sends debug headers, it
// then takes that name off the answer, so that no client learns the farm's
// pods. First in the chain, it sees the request before any other filter and
// the answer after every other. Nil when there is nothing to keep or hide.
func headerRecorder(fe model.Frontend) *hcmv3.HttpFilter {
	if !fe.AccessLog.Enabled && fe.DebugHeaders {
		return nil
	}
	config := &headertometadatav3.Config{ResponseRules: []*headertometadatav3.Config_Rule{{
		Header:          workerHeader,
		OnHeaderPresent: &headertometadatav3.Config_KeyValuePair{MetadataNamespace: logMetadata, Key: "workerPod"},
		Remove:          !fe.DebugHeaders,
	}}}
	if fe.AccessLog.Enabled {
		config.RequestRules = []*headertometadatav3.Config_Rule{{
			Header:          ":path",
			OnHeaderPresent: &headertometadatav3.Config_KeyValuePair{MetadataNamespace: logMetadata, Key: "path"},
		}}
	}
	return &hcmv3.HttpFilter{
		Name:       "envoy.filters.http.header_to_metadata",
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(config)},
	}
}

// routeMetadata names a route's site, pool and cache policy for the access log.
func routeMetadata(site string, r model.Route) *corev3.Metadata {
	fields := map[string]*structpb.Value{
		"site": structpb.NewStringValue(site),
		"pool": structpb.NewStringValue(r.Pool),
	}
	if r.CachePolicy != "" {
		fields["cachePolicy"] = structpb.NewStringValue(r.CachePolicy)
	}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{logMetadata: {Fields: fields}}}
}
