package discovery

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"webfarm.dev/operator/internal/render/k8s"
)

func frontendPod(ns, name, ip string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{k8s.LabelInstance: "shop"}},
		Status:     corev1.PodStatus{PodIP: ip, Phase: phase},
	}
}

func TestFrontendTargets(t *testing.T) {
	deleting := frontendPod("web", "shop-frontend-c", "10.0.0.9", corev1.PodRunning)
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tt := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"no frontends give an empty list, not null", nil, `[]`},
		{"a running frontend is scraped on its Envoy admin's Prometheus page, labelled with its namespace, pod and farm",
			[]corev1.Pod{frontendPod("web", "shop-frontend-a", "10.0.0.7", corev1.PodRunning)},
			`[{"targets":["10.0.0.7:19001"],"labels":{"__metrics_path__":"/stats/prometheus","namespace":"web","pod":"shop-frontend-a","webfarm_farm":"shop"}}]`},
		{"pods without an address, not running or going away are left out",
			[]corev1.Pod{frontendPod("web", "shop-frontend-b", "", corev1.PodPending), frontendPod("web", "shop-frontend-d", "10.0.0.8", corev1.PodSucceeded), deleting},
			`[]`},
		{"targets are sorted by namespace and pod",
			[]corev1.Pod{frontendPod("web", "z", "10.0.0.2", corev1.PodRunning), frontendPod("api", "y", "10.0.0.3", corev1.PodRunning), frontendPod("web", "a", "fd00::1", corev1.PodRunning)},
			`[{"targets":["10.0.0.3:19001"],"labels":{"__metrics_path__":"/stats/prometheus","namespace":"api","pod":"y","webfarm_farm":"shop"}},` +
				`{"targets":["[fd00::1]:19001"],"labels":{"__metrics_path__":"/stats/prometheus","namespace":"web","pod":"a","webfarm_farm":"shop"}},` +
				`{"targets":["10.0.0.2:19001"],"labels":{"__metrics_path__":"/stats/prometheus","namespace":"web","pod":"z","webfarm_farm":"shop"}}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(frontendTargets(tt.pods))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
