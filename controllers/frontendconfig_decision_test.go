package controllers

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/xds"
)

func TestFrontendConfigVerdict(t *testing.T) {
	const cluster = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	runs := func(pod, version string) observations.FrontendConfig {
		return observations.FrontendConfig{Pod: pod, Version: version, Rejected: 2, RejectedBefore: 2}
	}
	refused := func(pod, version string) observations.FrontendConfig {
		return observations.FrontendConfig{Pod: pod, Version: version, Rejected: 3, RejectedBefore: 2}
	}
	badCluster := xds.Rejection{Node: "web-frontend-b", TypeURL: cluster, Version: "v2",
		Message: "Invalid duration: Expected positive duration\n"}
	tests := []struct {
		name      string
		frontends []observations.FrontendConfig
		rejection *xds.Rejection // the server's, if any
		reason    string
		message   []string // in the message
	}{
		{"every frontend running the version sent has accepted it",
			[]observations.FrontendConfig{runs("web-frontend-a", "v2"), runs("web-frontend-b", "v2")}, nil,
			ReasonConfigAccepted, []string{"all 2 frontends run version v2"}},
		{"a refusal of an older version does not count once the frontend runs the version sent",
			[]observations.FrontendConfig{refused("web-frontend-a", "v2")}, nil,
			ReasonConfigAccepted, []string{"the frontend runs version v2"}},
		{"a frontend that does not run the version sent yet, having refused nothing since its own, is updating",
			[]observations.FrontendConfig{runs("web-frontend-a", "v2"), runs("web-frontend-b", "v1")}, nil,
			ReasonConfigUpdating, []string{"1 of 2 frontends runs version v2"}},
		{"the server's rejection names the frontend, the kind of resources and Envoy's message",
			[]observations.FrontendConfig{runs("web-frontend-a", "v2"), refused("web-frontend-b", "v1")}, &badCluster,
			ReasonConfigRejected, []string{"frontend web-frontend-b refused the Cluster resources of version v2: Invalid duration: Expected positive duration;"}},
		{"a frontend that took the rest of the version sent is rejecting when the server holds its refusal",
			[]observations.FrontendConfig{runs("web-frontend-b", "v2")}, &badCluster,
			ReasonConfigRejected, []string{"frontend web-frontend-b refused the Cluster resources"}},
		{"a refusal whose response the server no longer knew names no version",
			[]observations.FrontendConfig{refused("web-frontend-b", "v1")}, &xds.Rejection{Node: "web-frontend-b", TypeURL: cluster, Message: "bad"},
			ReasonConfigRejected, []string{"frontend web-frontend-b refused the Cluster resources: bad;"}},
		{"a refusal another replica received points to that replica's log",
			[]observations.FrontendConfig{refused("web-frontend-a", "v1"), runs("web-frontend-b", "v2")}, nil,
			ReasonConfigRejected, []string{"frontend web-frontend-a runs version v1 and refused a later one", "log of the operator replica"}},
		{"a rejection by a frontend no longer read says nothing",
			[]observations.FrontendConfig{runs("web-frontend-a", "v2")}, &badCluster,
			ReasonConfigAccepted, []string{"the frontend runs version v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rejection xds.Rejection
			if tt.rejection != nil {
				rejection = *tt.rejection
			}
			got := frontendConfigVerdict("v2", tt.frontends, rejection, tt.rejection != nil)
			if got.reason != tt.reason || got.accepted != (tt.reason == ReasonConfigAccepted) {
				t.Errorf("reason %s (accepted %v), want %s; message %q", got.reason, got.accepted, tt.reason, got.message)
			}
			for _, m := range tt.message {
				if !strings.Contains(got.message, m) {
					t.Errorf("message %q does not say %q", got.message, m)
				}
			}
			want := v1.FrontendConfigStatus{Version: "v2"}
			for _, f := range tt.frontends {
				want.Frontends = append(want.Frontends, v1.FrontendVersion{Pod: f.Pod, Version: f.Version})
			}
			if !reflect.DeepEqual(got.status, want) {
				t.Errorf("status %+v, want %+v", got.status, want)
			}
		})
	}
}

func TestFrontendConfigStatusKeepsTheAPIsBound(t *testing.T) {
	frontends := make([]observations.FrontendConfig, maxFrontendVersions+5)
	for i := range frontends {
		frontends[i] = observations.FrontendConfig{Pod: fmt.Sprintf("web-frontend-%03d", i), Version: "v2"}
	}
	got := frontendConfigVerdict("v2", frontends, xds.Rejection{}, false)
	if len(got.status.Frontends) != maxFrontendVersions || got.message != fmt.Sprintf("all %d frontends run version v2", len(frontends)) {
		t.Errorf("%d frontends in the status, message %q; want %d and all counted", len(got.status.Frontends), got.message, maxFrontendVersions)
	}
}
