package observations

import (
	"testing"

	"webfarm.dev/operator/internal/envoystats"
)

func TestAFarmsCertificatesTellTheReconcilerOnlyWhenTheyChange(t *testing.T) {
	var s Store
	web := key("web", "contoso")
	loaded := map[string]envoystats.Certificate{"shop": {Loaded: 1}}
	steps := []struct {
		name       string
		frontends  FrontendCertificates
		wantChange bool
		wantStored bool
	}{
		{"a first reading is a change", FrontendCertificates{loaded}, true, true},
		{"the same reading again is none", FrontendCertificates{{"shop": {Loaded: 1}}}, false, true},
		{"a frontend rejecting a certificate is one", FrontendCertificates{loaded, {"shop": {Rejected: 1}}}, true, true},
		{"nothing to judge drops the reading", nil, true, false},
		{"nothing to judge again is no change", nil, false, false},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			if changed := s.SetCertificates(web, step.frontends); changed != step.wantChange {
				t.Errorf("changed %v, want %v", changed, step.wantChange)
			}
			if _, ok := s.Certificates(web); ok != step.wantStored {
				t.Errorf("stored %v, want %v", ok, step.wantStored)
			}
		})
	}
	s.SetCertificates(web, FrontendCertificates{loaded})
	s.ForgetFarm(web)
	if got, ok := s.Certificates(web); ok {
		t.Errorf("a forgotten farm still has %v", got)
	}
}
