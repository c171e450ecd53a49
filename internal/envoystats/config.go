package envoystats

import (
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ConfigQuery keeps Envoy's page to its xDS subscriptions' state: listeners
// (LDS), clusters (CDS), each cluster's endpoints (EDS), route
// configurations (RDS) and virtual hosts (VHDS). A version is a text
// readout, on the Prometheus page only when asked for.
var ConfigQuery = url.Values{
	"text_readouts": {""},
	"filter": {`^(listener_manager\.lds|cluster_manager\.cds|cluster\..+|http\..+\.rds\..+)\.` +
		`(version_text|update_time|update_rejected)$`},
}.Encode()

// Config is which routing configuration a frontend runs.
type Config struct {
	// Version is the version of the subscription updated last: under delta
	// xDS only the kinds of resources that changed are sent, each stamped
	// with the configuration's version, so the others keep older ones.
	Version string
	// Rejected counts the updates its subscriptions refused since it started.
	Rejected uint64
}

// subscription is one xDS subscription's figures.
type subscription struct {
	version           string
	updated, rejected uint64 // updated: ms since the epoch of its last accepted update
}

// Configuration reads an Envoy Prometheus page (ConfigQuery) into the
// configuration it runs.
func Configuration(r io.Reader) (Config, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return Config{}, fmt.Errorf("envoy stats: %w", err)
	}
	subs := map[string]subscription{}
	for name, f := range families {
		for suffix, set := range map[string]func(s *subscription, m *dto.Metric){
			"_version_text":    func(s *subscription, m *dto.Metric) { s.version = label(m, "text_value") },
			"_update_time":     func(s *subscription, m *dto.Metric) { s.updated = value(m) },
			"_update_rejected": func(s *subscription, m *dto.Metric) { s.rejected = value(m) },
		} {
			prefix, ok := strings.CutSuffix(name, suffix)
			if !ok {
				continue
			}
			for _, m := range f.GetMetric() {
				key := subscriptionKey(prefix, m)
				s := subs[key]
				set(&s, m)
				subs[key] = s
			}
		}
	}
	var c Config
	var latest uint64
	// In the keys' order, so that two updated in the same millisecond give
	// the same answer each time.
	for _, key := range slices.Sorted(maps.Keys(subs)) {
		s := subs[key]
		c.Rejected += s.rejected
		if s.version != "" && (c.Version == "" || s.updated > latest) {
			c.Version, latest = s.version, s.updated
		}
	}
	return c, nil
}

// subscriptionKey names a subscription by its series' name and labels, its
// version's text aside.
func subscriptionKey(prefix string, m *dto.Metric) string {
	labels := []string{prefix}
	for _, l := range m.GetLabel() {
		if l.GetName() != "text_value" {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
	}
	slices.Sort(labels[1:])
	return strings.Join(labels, ",")
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
