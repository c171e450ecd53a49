package envoystats

import (
	"strings"
	"testing"
)

// certificatesPage is what Envoy 1.40 writes for two sites, one whose
// certificate it loaded and one it could not read (as CertificateQuery
// filters the page).
const certificatesPage = `# TYPE envoy_sds_update_rejected counter
envoy_sds_update_rejected{envoy_xds_resource_name="cert_blog"} 0
envoy_sds_update_rejected{envoy_xds_resource_name="cert_my-shop"} 2
# TYPE envoy_sds_update_success counter
envoy_sds_update_success{envoy_xds_resource_name="cert_blog"} 3
envoy_sds_update_success{envoy_xds_resource_name="cert_my-shop"} 0
envoy_sds_update_success{envoy_xds_resource_name="other"} 7
`

func TestCertificatesReadsEachSitesLoadedAndRejectedCounts(t *testing.T) {
	got, err := Certificates(strings.NewReader(certificatesPage))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Certificate{"blog": {Loaded: 3}, "my-shop": {Rejected: 2}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for site, c := range want {
		if got[site] != c {
			t.Errorf("%s: got %+v, want %+v", site, got[site], c)
		}
	}
}

func TestCertificatesRefusesAPageThatIsNotPrometheusText(t *testing.T) {
	if _, err := Certificates(strings.NewReader("{not prometheus")); err == nil {
		t.Error("no error")
	}
}
