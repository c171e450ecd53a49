package controllers_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/k8s"
)

// warnings collects the API server's warnings.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.text
	w.text = nil
	return t
}

// The API server's PodSecurity admission warns about workload templates whose
// pods the namespace's "restricted" level would refuse.
func TestGeneratedPodTemplatesPassTheAPIServersRestrictedPodSecurityCheck(t *testing.T) {
	ns := newNamespace(t) // labelled pod-security.kubernetes.io/warn=restricted
	var w warnings
	warnCfg := rest.CopyConfig(cfg)
	warnCfg.WarningHandler = &w
	cs, err := kubernetes.NewForConfig(warnCfg)
	if err != nil {
		t.Fatal(err)
	}

	farm := model.Farm{Name: "web", Namespace: ns, UID: "u1", Platform: platform,
		Frontend: model.Frontend{Replicas: 2, ServiceType: "ClusterIP", Port: 80, CPUMilli: 500, MemoryBytes: 256 << 20}}
	pool := model.Pool{Name: "shop", Namespace: ns, UID: "u2", Platform: platform, Replicas: ptrInt32(2),
		CPUMilli: 500, MemoryBytes: 128 << 20, MaxConcurrentRequests: 100,
		Content: model.Content{Source: model.ContentImage, Name: "registry.example.com/shop-content:1", ImagePath: "/content"},
		App: &model.App{Image: "registry.example.com/shop:1", Port: 3000, Volumes: []model.Volume{
			{Name: "db", MountPath: "/etc/shop/db", Kind: model.VolumeSecret, Object: "shop-db", ReadOnly: true},
			{Name: "settings", MountPath: "/etc/shop/settings", Kind: model.VolumeConfigMap, Object: "shop-settings", ReadOnly: true},
			{Name: "uploads", MountPath: "/srv/uploads", Kind: model.VolumeClaim, Object: "shop-uploads"},
		}},
		Health: model.HealthCheck{Path: "/", Interval: 30 * time.Second, Timeout: 5 * time.Second, FailureThreshold: 3,
			Pinging: true, PingInterval: 30 * time.Second, PingResponseTime: 90 * time.Second, StartupTimeLimit: 90 * time.Second, ShutdownTimeLimit: 90 * time.Second},
		Rollout: model.Rollout{MaxSurge: 1}}
	cache := model.Cache{Name: "static", Namespace: ns, UID: "u3", Platform: platform, Replicas: 2, CPUMilli: 250, MemorySizeBytes: 64 << 20}

	privileged := appsv1ac.Deployment("privileged", ns).WithSpec(appsv1ac.DeploymentSpec().
		WithSelector(k8s.Pool(pool, "").Deployment.Spec.Selector).
		WithTemplate(corev1ac.PodTemplateSpec().WithLabels(k8s.SelectorLabels("pool", "shop")).
			WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("c").WithImage("x").
				WithSecurityContext(corev1ac.SecurityContext().WithPrivileged(true))))))

	tests := []struct {
		name       string
		deployment *appsv1ac.DeploymentApplyConfiguration
		wantWarned bool
	}{
		{"the Envoy frontend is not warned about", k8s.Frontend(farm, []byte("{}")).Deployment, false},
		{"a pool with image content and an app that mounts a Secret, a ConfigMap and a claim is not warned about", k8s.Pool(pool, "").Deployment, false},
		{"a cache tier is not warned about", k8s.Cache(cache, "", "").Deployment, false},
		{"a privileged pod, as a control, is warned about", privileged, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.deployment.OwnerReferences = nil // the owners do not exist here
			if _, err := cs.AppsV1().Deployments(ns).Apply(context.Background(), tt.deployment, metav1.ApplyOptions{FieldManager: "pod-security-test"}); err != nil {
				t.Fatal(err)
			}
			got := w.take()
			warned := false
			for _, text := range got {
				if strings.Contains(text, "restricted") {
					warned = true
				}
			}
			if warned != tt.wantWarned {
				t.Errorf("warned = %v, want %v; warnings: %q", warned, tt.wantWarned, got)
			}
		})
	}
}

func ptrInt32(v int32) *int32 { return &v }
