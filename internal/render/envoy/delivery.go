package envoy

import (
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	brotliv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	gzipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	bandwidthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/bandwidth_limit/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/model"
)

// How the frontend delivers responses: the farm's compression, keep-alive
// and per-site bandwidth limit (IIS HTTP compression, HTTP keep-alives and
// MaxBandwidth).

// minCompressedBytes: a smaller response gains too little from compression
// to pay for it.
const minCompressedBytes = 256

// compressedTypes are the content types the frontend compresses: text, and
// the text formats of scripts, data and vector images. Images, archives and
// video are compressed already.
var compressedTypes = []string{
	"text/html", "text/plain", "text/css", "text/xml", "text/javascript",
	"application/javascript", "application/json", "application/xml",
	"application/xhtml+xml", "image/svg+xml",
}

// compressionFilters compress responses with brotli or gzip, whichever the
// client's Accept-Encoding prefers (brotli when it accepts both equally).
// Envoy adds "Vary: Accept-Encoding" and leaves alone responses that are
// encoded already, too short, or of other types.
func compressionFilters() []*hcmv3.HttpFilter {
	return []*hcmv3.HttpFilter{
		compressor("envoy.filters.http.compressor.brotli", "brotli", &brotliv3.Brotli{}, true),
		compressor("envoy.filters.http.compressor.gzip", "gzip", &gzipv3.Gzip{}, false),
	}
}

func compressor(filterName, library string, config proto.Message, first bool) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name: filterName,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&compressorv3.Compressor{
			ResponseDirectionConfig: &compressorv3.Compressor_ResponseDirectionConfig{
				CommonConfig: &compressorv3.Compressor_CommonDirectionConfig{
					MinContentLength: wrapperspb.UInt32(minCompressedBytes),
					ContentType:      compressedTypes,
				},
			},
			CompressorLibrary: &corev3.TypedExtensionConfig{Name: library, TypedConfig: mustAny(config)},
			ChooseFirst:       first,
		})},
	}
}

// bandwidthFilterName is the bandwidth limit filter; a site's limit is its
// virtual host's configuration of it.
const bandwidthFilterName = "envoy.filters.http.bandwidth_limit"

// bandwidthFilter is in the chain of a farm with a limited site; without a
// limit of its own (sites without one), it passes everything.
func bandwidthFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       bandwidthFilterName,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&bandwidthv3.BandwidthLimit{StatPrefix: "site"})},
	}
}

// limitBandwidth limits a site's responses on this frontend replica, each
// site with its own token bucket. Envoy counts in KiB/s: the limit is
// rounded down to whole KiB/s (the API's minimum is 1 KiB/s).
func limitBandwidth(vh *routev3.VirtualHost, bytesPerSecond int64) {
	if bytesPerSecond <= 0 {
		return
	}
	if vh.TypedPerFilterConfig == nil {
		vh.TypedPerFilterConfig = map[string]*anypb.Any{}
	}
	vh.TypedPerFilterConfig[bandwidthFilterName] = mustAny(&bandwidthv3.BandwidthLimit{
		StatPrefix:   "site_" + vh.Name,
		EnableMode:   bandwidthv3.BandwidthLimit_RESPONSE,
		LimitKbps:    wrapperspb.UInt64(uint64(max(1, bytesPerSecond/1024))),
		FillInterval: durationpb.New(50 * time.Millisecond),
	})
}

// anyLimitedSite: a site of the farm has a bandwidth limit, so the frontend
// needs the filter that enforces it.
func anyLimitedSite(f model.Farm) bool {
	for _, s := range f.Sites {
		if s.MaxBandwidthBytesPerSecond > 0 {
			return true
		}
	}
	return false
}

// connectionOptions: the idle timeout of client connections, and without
// keep-alive one request per connection (Envoy answers it with
// "Connection: close" and closes the connection).
func connectionOptions(fe model.Frontend) *corev3.HttpProtocolOptions {
	o := &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(fe.ConnectionTimeout)}
	if !fe.KeepAlive {
		o.MaxRequestsPerConnection = wrapperspb.UInt32(1)
	}
	return o
}
