package k8s

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/internal/vocabulary"
)

// CacheObjects are the children of a CachePolicy that routes use.
type CacheObjects struct {
	ConfigMap           *corev1ac.ConfigMapApplyConfiguration
	Service             *corev1ac.ServiceApplyConfiguration
	Deployment          *appsv1ac.DeploymentApplyConfiguration
	PodDisruptionBudget *policyv1ac.PodDisruptionBudgetApplyConfiguration
}

// cacheOverheadBytes is the memory a cache pod's nginx needs besides its
// cache: nginx itself and its buffers. The in-memory cache volume counts
// against its limit.
const (
	cacheOverheadBytes = 64 << 20
	agentMemoryBytes   = 64 << 20
)

// cacheVolumeBytes is room for memorySize with headroom: nginx's cache
// manager evicts down to max_size shortly after the cache outgrows it, and a
// volume over its size limit gets the pod evicted.
func cacheVolumeBytes(memorySize int64) int64 { return memorySize + memorySize/4 + 16<<20 }

// agentCPUMilli is the CPU of the agent beside a cache tier's nginx: it
// carries the misses.
func agentCPUMilli(cacheCPUMilli int64) int64 { return max(50, cacheCPUMilli/4) }

// Cache builds a cache tier around its rendered nginx.conf and the
// configuration of its agent.
func Cache(cache model.Cache, nginxConf, agentConf string) CacheObjects {
	name := vocabulary.CacheName(cache.Name)
	owner := Owner{Kind: "CachePolicy", Name: cache.Name, UID: cache.UID}

	c := children{component: vocabulary.ComponentCache, instance: cache.Name, name: name, namespace: cache.Namespace, owner: owner}

	volumeBytes := cacheVolumeBytes(cache.MemorySizeBytes)
	// TCP probes: an HTTP probe would be a request nginx counts, and the
	// agent takes the hits from nginx's request count.
	worker := nginxContainer(cache.Platform.Images, cache.CPUMilli, volumeBytes+cacheOverheadBytes, containerPort("http", nginx.HTTPPort), containerPort("status", nginx.StatusPort)).
		WithReadinessProbe(tcpProbe("http", 5*time.Second, time.Second, 3)).
		WithLivenessProbe(tcpProbe("status", 10*time.Second, 2*time.Second, 3)).
		WithLifecycle(drainPause(drainSeconds)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(cacheVolume).WithMountPath(nginx.CacheDir))
	images := cache.Platform.Images
	agent := corev1ac.Container().WithName("agent").
		WithImage(images.CacheAgent).WithImagePullPolicy(corev1.PullPolicy(images.PullPolicy)).
		WithCommand("/manager", "cache-agent", "--config", nginx.ConfigDir+"/"+vocabulary.AgentConfigFile).
		WithPorts(containerPort("agent", vocabulary.AgentAdminPort)).
		WithReadinessProbe(httpProbe(vocabulary.AgentHealthPath, "agent", 5*time.Second, time.Second, 3)).
		WithLivenessProbe(httpProbe(vocabulary.AgentHealthPath, "agent", 10*time.Second, 2*time.Second, 3)).
		WithResources(resources(agentCPUMilli(cache.CPUMilli), agentMemoryBytes)).
		WithSecurityContext(restrictedContainer()).
		// The agent serves nginx's misses until nginx stops.
		WithLifecycle(drainPause(drainSeconds)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(configVolume).WithMountPath(nginx.ConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath(nginx.TmpDir),
			corev1ac.VolumeMount().WithName(cacheVolume).WithMountPath(nginx.CacheDir),
		)

	memory := corev1ac.Volume().WithName(cacheVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource().
		WithMedium(corev1.StorageMediumMemory).
		WithSizeLimit(*resource.NewQuantity(volumeBytes, resource.BinarySI)))
	pod := corev1ac.PodSpec().WithContainers(worker, agent).WithVolumes(configMapVolume(name), tmpVolumeSource(), memory)
	return CacheObjects{
		ConfigMap:           c.configMap(map[string]string{NginxConfigKey: nginxConf, vocabulary.AgentConfigFile: agentConf}),
		Service:             c.service(corev1.ServiceTypeClusterIP, 80, 0),
		Deployment:          c.deployment(&cache.Replicas, ConfigHash(nginxConf, vocabulary.AgentConfigFile, agentConf), pod, cache.Placement),
		PodDisruptionBudget: c.podDisruptionBudget(),
	}
}
