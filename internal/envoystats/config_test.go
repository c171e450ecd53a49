package envoystats

import (
	"strings"
	"testing"
)

// realConfigPage is Envoy 1.40's answer to ConfigQuery as served by the
// operator's xDS server (captured in internal/xds's live test), its virtual
// hosts' and clusters' figures set as after a change of one virtual host
// (version 8c2e...) and a refused cluster update.
const realConfigPage = `# TYPE envoy_cluster_update_rejected counter
envoy_cluster_update_rejected{envoy_cluster_name="pool/web"} 0
# TYPE envoy_cluster_manager_cds_update_rejected counter
envoy_cluster_manager_cds_update_rejected{} 1
# TYPE envoy_http_rds_update_rejected counter
envoy_http_rds_update_rejected{envoy_rds_route_config="farm",envoy_http_conn_manager_prefix="farm"} 0
envoy_http_rds_update_rejected{envoy_rds_route_config="vhds.farm",envoy_http_conn_manager_prefix="farm"} 0
# TYPE envoy_listener_manager_lds_update_rejected counter
envoy_listener_manager_lds_update_rejected{} 0
# TYPE envoy_cluster_update_time gauge
envoy_cluster_update_time{envoy_cluster_name="pool/web"} 1795889204248
# TYPE envoy_cluster_manager_cds_update_time gauge
envoy_cluster_manager_cds_update_time{} 1795889204247
# TYPE envoy_http_rds_update_time gauge
envoy_http_rds_update_time{envoy_rds_route_config="farm",envoy_http_conn_manager_prefix="farm"} 1795889204251
envoy_http_rds_update_time{envoy_rds_route_config="vhds.farm",envoy_http_conn_manager_prefix="farm"} 1795889301114
# TYPE envoy_listener_manager_lds_update_time gauge
envoy_listener_manager_lds_update_time{} 1795889204250
# TYPE envoy_cluster_version_text gauge
envoy_cluster_version_text{envoy_cluster_name="pool/web",text_value="701f447429b476a1"} 0
# TYPE envoy_cluster_manager_cds_version_text gauge
envoy_cluster_manager_cds_version_text{text_value="701f447429b476a1"} 0
# TYPE envoy_http_rds_version_text gauge
envoy_http_rds_version_text{envoy_rds_route_config="farm",envoy_http_conn_manager_prefix="farm",text_value="701f447429b476a1"} 0
envoy_http_rds_version_text{envoy_rds_route_config="vhds.farm",envoy_http_conn_manager_prefix="farm",text_value="8c2e0b6f31d5a9e7"} 0
# TYPE envoy_listener_manager_lds_version_text gauge
envoy_listener_manager_lds_version_text{text_value="701f447429b476a1"} 0
`

func TestConfiguration(t *testing.T) {
	tests := []struct {
		name string
		page string
		want Config
	}{
		{"the version is that of the subscription updated last, the rejections those of all",
			realConfigPage, Config{Version: "8c2e0b6f31d5a9e7", Rejected: 1}},
		{"a subscription never updated has no version and does not count",
			"# TYPE envoy_listener_manager_lds_version_text gauge\nenvoy_listener_manager_lds_version_text{text_value=\"v1\"} 0\n" +
				"# TYPE envoy_listener_manager_lds_update_time gauge\nenvoy_listener_manager_lds_update_time{} 5\n" +
				"# TYPE envoy_cluster_manager_cds_version_text gauge\nenvoy_cluster_manager_cds_version_text{text_value=\"\"} 0\n" +
				"# TYPE envoy_cluster_manager_cds_update_time gauge\nenvoy_cluster_manager_cds_update_time{} 0\n",
			Config{Version: "v1"}},
		{"an Envoy that has no configuration yet runs none", "", Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Configuration(strings.NewReader(tt.page))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigurationOfAMalformedPage(t *testing.T) {
	if _, err := Configuration(strings.NewReader("envoy_cluster_manager_cds_update_time{ 1\n")); err == nil {
		t.Error("a malformed page was read")
	}
}
