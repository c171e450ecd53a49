package k8s

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
)

// CacheObjects are the children of a CachePolicy that routes use.
type CacheObjects struct {
	ConfigMap  *corev1ac.ConfigMapApplyConfiguration
	Service    *corev1ac.ServiceApplyConfiguration
	Deployment *appsv1ac.DeploymentApplyConfiguration
}

// cacheOverheadBytes is the memory a cache pod needs besides its cache: nginx
// itself and its buffers. The in-memory cache volume counts against the limit.
const cacheOverheadBytes = 64 << 20

// Cache builds a cache tier around its rendered nginx.conf.
func Cache(cache model.Cache, nginxConf string) CacheObjects {
	name := CacheName(cache.Name)
	owner := Owner{Kind: "CachePolicy", Name: cache.Name, UID: cache.UID}

	c := children{component: ComponentCache, instance: cache.Name, name: name, namespace: cache.Namespace, owner: owner}

	worker := nginxContainer(cache.Platform.Images, cache.CPUMilli, cache.MemorySizeBytes+cacheOverheadBytes).
		WithReadinessProbe(httpProbe("/healthz", "status", 5*time.Second, time.Second, 3)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(cacheVolume).WithMountPath(nginx.CacheDir))

	memory := corev1ac.Volume().WithName(cacheVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource().
		WithMedium(corev1.StorageMediumMemory).
		WithSizeLimit(*resource.NewQuantity(cache.MemorySizeBytes, resource.BinarySI)))
	pod := corev1ac.PodSpec().WithContainers(worker).WithVolumes(configMapVolume(name), tmpVolumeSource(), memory)
	return CacheObjects{
		ConfigMap:  c.configMap(map[string]string{NginxConfigKey: nginxConf}),
		Service:    c.service(corev1.ServiceTypeClusterIP, 80, 0),
		Deployment: c.deployment(&cache.Replicas, ConfigHash(nginxConf), pod),
	}
}
